"""Paths the tests read: the repository's fixtures and, when present,
../shared/conformance (said loudly when it is missing)."""

import pathlib
import warnings

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "fixtures" / "sessions"
CONFORMANCE = ROOT.parent / "shared" / "conformance"


@pytest.fixture(scope="session")
def conformance_dir():
    if not CONFORMANCE.is_dir():
        msg = f"SKIPPED: {CONFORMANCE} is missing: the conformance sessions are not checked"
        warnings.warn(msg)
        print("\n" + "!" * 70 + "\n" + msg + "\n" + "!" * 70)
        pytest.skip(msg)
    return CONFORMANCE
