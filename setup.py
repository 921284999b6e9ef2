"""The one C module of the package, built where a C compiler is at hand (everything else is in pyproject.toml).

``otel_agent_replay.capture._runs_native`` is the one pass's run loop (``capture/_tokenruns.py`` says why it
is in C). It is optional: without a compiler the package installs and uses the same loop in Python.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "otel_agent_replay.capture._runs_native",
            ["otel_agent_replay/capture/_runs_native.c"],
            optional=True,
        )
    ]
)
