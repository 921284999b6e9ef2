"""Test helpers: servers on loopback, raw tape readers, sample tools. No tests here."""
