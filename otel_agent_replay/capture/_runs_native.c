/* The runs of token characters of a captured document, looked up in the one pass's verdicts (issue 30).
 *
 * The one pass (``_onepass``) judges every run of 16 or more token characters of a document's JSON text by
 * the character before it and the run (``_RUN_VERDICTS``, a dict of str to a tuple of offsets). Finding the
 * runs and looking each up is a loop of a few calls per run in the interpreter, about half a microsecond a
 * run; a configuration file of 100 KB holds two thousand of them. This module does that loop in C, with the
 * same meaning as ``_tokenruns.python_runs`` (which is used when this module is not built, and which the
 * tests compare it with). Nothing else is decided here: what a run is (the translation table) and what a
 * run holds (the verdicts) stay in Python.
 *
 *   runs(mapped, data, min_len, verdicts) -> (unknown, dirty)
 *
 * ``mapped``: the document's ASCII bytes translated so that a token character is ``a`` and any other byte
 * is not; ``data``: the document's ASCII bytes (the same length). For each maximal stretch [at, end) of
 * ``a`` at least ``min_len`` long, the key is ``data[at - 1:end]`` as str (``" " + data[:end]`` at 0); a key
 * that ``verdicts`` lacks gives ``(at, key)`` in ``unknown``, one whose verdict is a non-empty tuple gives
 * ``(at, verdict)`` in ``dirty``, one whose verdict is empty gives nothing.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Whether every byte is below 128 (the keys are made as ASCII str), eight bytes at a time. */
static int
is_ascii(const unsigned char *bytes, Py_ssize_t size)
{
    uint64_t seen = 0;
    Py_ssize_t k = 0;
    for (; k + 8 <= size; k += 8) {
        uint64_t word;
        memcpy(&word, bytes + k, 8);
        seen |= word;
    }
    for (; k < size; k++) {
        seen |= bytes[k];
    }
    return (seen & 0x8080808080808080ULL) == 0;
}

static PyObject *
make_key(const char *data, Py_ssize_t at, Py_ssize_t end)
{
    Py_ssize_t from = at > 0 ? at - 1 : 0;
    Py_ssize_t size = end - from + (at > 0 ? 0 : 1);
    PyObject *key = PyUnicode_New(size, 127);
    if (key == NULL) {
        return NULL;
    }
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(key);
    if (at > 0) {
        memcpy(out, data + from, (size_t)size);
    } else {
        out[0] = ' ';
        memcpy(out + 1, data, (size_t)end);
    }
    return key;
}

static int
add_pair(PyObject *list, Py_ssize_t at, PyObject *value)
{
    PyObject *pair = Py_BuildValue("(nO)", at, value);
    if (pair == NULL) {
        return -1;
    }
    int failed = PyList_Append(list, pair);
    Py_DECREF(pair);
    return failed;
}

static PyObject *
runs(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer mapped_view, data_view;
    Py_ssize_t min_len;
    PyObject *verdicts;
    if (!PyArg_ParseTuple(args, "y*y*nO!", &mapped_view, &data_view, &min_len, &PyDict_Type, &verdicts)) {
        return NULL;
    }
    PyObject *unknown = NULL, *dirty = NULL, *result = NULL;
    if (mapped_view.len != data_view.len || min_len < 1) {
        PyErr_SetString(PyExc_ValueError, "runs: mapped and data must have one length, min_len at least 1");
        goto done;
    }
    if (!is_ascii((const unsigned char *)data_view.buf, data_view.len)) {
        PyErr_SetString(PyExc_ValueError, "runs: data must be ASCII");
        goto done;
    }
    unknown = PyList_New(0);
    dirty = PyList_New(0);
    if (unknown == NULL || dirty == NULL) {
        goto done;
    }
    const char *m = (const char *)mapped_view.buf;
    const char *data = (const char *)data_view.buf;
    Py_ssize_t n = mapped_view.len;
    /* i: the first position not yet looked at; m[i - 1] is never 'a', so a run found at j starts at i or after. */
    Py_ssize_t i = 0;
    while (i + min_len <= n) {
        Py_ssize_t j = i + min_len - 1;
        if (m[j] != 'a') {
            i = j + 1; /* no run of min_len can hold j, nor start in [i, j] */
            continue;
        }
        Py_ssize_t at = j;
        while (at > i && m[at - 1] == 'a') {
            at--;
        }
        Py_ssize_t end = j + 1;
        while (end < n && m[end] == 'a') {
            end++;
        }
        if (end - at >= min_len) {
            PyObject *key = make_key(data, at, end);
            if (key == NULL) {
                goto done;
            }
            PyObject *verdict = PyDict_GetItemWithError(verdicts, key);
            /* held, not borrowed: an allocation below may run the collector, whose finalizers may change the dict */
            Py_XINCREF(verdict);
            int failed;
            if (verdict == NULL) {
                failed = PyErr_Occurred() != NULL ? -1 : add_pair(unknown, at, key);
            } else if (PyTuple_Check(verdict) && PyTuple_GET_SIZE(verdict) == 0) {
                failed = 0;
            } else {
                failed = add_pair(dirty, at, verdict);
            }
            Py_XDECREF(verdict);
            Py_DECREF(key);
            if (failed) {
                goto done;
            }
        }
        i = end + 1; /* m[end] is not 'a' (or end is n) */
    }
    result = PyTuple_Pack(2, unknown, dirty);
done:
    Py_XDECREF(unknown);
    Py_XDECREF(dirty);
    PyBuffer_Release(&mapped_view);
    PyBuffer_Release(&data_view);
    return result;
}

static PyMethodDef methods[] = {
    {"runs", runs, METH_VARARGS, "The runs of token characters, looked up in the verdicts: (unknown, dirty)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_runs_native", "The one pass's run loop in C (see _tokenruns).", -1, methods, NULL, NULL,
    NULL, NULL,
};

PyMODINIT_FUNC
PyInit__runs_native(void)
{
    return PyModule_Create(&module);
}
