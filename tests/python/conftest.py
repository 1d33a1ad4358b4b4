# SPDX-License-Identifier: GPL-3.0-or-later
"""Test setup: the kvscope package from python/, the oracle's reference cache_utils.py installed as
`transformers.cache_utils` (the seed file the engine reproduces), and the C++ CLI when it is built.

The reference lives in ../shared/oracle/transformers_ref beside the checkout (KVSCOPE_ORACLE_DIR
overrides it); tests that need it are skipped with a message when it is missing.
"""

import importlib
import os
import subprocess
import sys
import json

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
ORACLE = os.environ.get("KVSCOPE_ORACLE_DIR", os.path.join(os.path.dirname(ROOT), "shared", "oracle"))
CLI = os.environ.get("KVSCOPE_CLI", os.path.join(ROOT, "build", "dev", "engine", "cli", "kvscope-cli"))
FIXTURES = os.path.join(ROOT, "tests", "data", "conformance")


def _install_reference():
    """Makes `import transformers.cache_utils` give the reference (unless a real one is installed
    and KVSCOPE_TEST_REAL_TRANSFORMERS is set)."""
    if os.environ.get("KVSCOPE_TEST_REAL_TRANSFORMERS"):
        return importlib.import_module("transformers.cache_utils")
    if not os.path.isdir(os.path.join(ORACLE, "transformers_ref")):
        return None
    if ORACLE not in sys.path:
        sys.path.insert(0, ORACLE)
    package = importlib.import_module("transformers_ref")
    cache_utils = importlib.import_module("transformers_ref.cache_utils")
    sys.modules.setdefault("transformers", package)
    sys.modules.setdefault("transformers.cache_utils", cache_utils)
    return cache_utils


REFERENCE = _install_reference()


@pytest.fixture
def cu():
    if REFERENCE is None:
        pytest.skip("the reference cache_utils.py is not at %s (set KVSCOPE_ORACLE_DIR)" % ORACLE)
    return REFERENCE


def cli_available() -> bool:
    return os.access(CLI, os.X_OK)


@pytest.fixture
def cli():
    """Runs kvscope-cli and returns (exit code, parsed JSON stdout or None, stderr)."""
    if not cli_available():
        pytest.skip("kvscope-cli is not built at %s: cmake --preset dev && cmake --build build/dev "
                    "--target kvscope-cli (or set KVSCOPE_CLI)" % CLI)

    def run(*args):
        done = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=300)
        try:
            parsed = json.loads(done.stdout) if done.stdout.strip()[:1] in ("{", "[") else None
        except ValueError:
            parsed = None
        return done.returncode, parsed, done.stderr
    return run
