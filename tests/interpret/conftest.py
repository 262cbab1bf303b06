"""Known, open differences from XLA in the interpreter tests, each with its reason."""
from __future__ import annotations

import pytest

# Open: XLA's sign() of complex numbers (z / |z|, with its NaN and zero rules) is not yet
# matched bit for bit; tracked in the issue "Run any HLO module on the CPU".
KNOWN_OPEN = {
    "test_unary[sign-complex64]": "complex sign differs from XLA:CPU (open)",
    "test_unary[sign-complex128]": "complex sign differs from XLA:CPU (open)",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        reason = KNOWN_OPEN.get(item.name)
        if reason and "test_elementwise" in item.nodeid:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=False))
