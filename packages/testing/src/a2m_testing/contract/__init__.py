"""The standard suite of the four-method adapter contract (``write``, ``read``, ``query``,
``delete``), which any adapter subclasses to prove it honours the contract.

```python
from a2m.adapter import A2MAdapter
from a2m_testing.contract import AdapterContract


class TestMyAdapter(AdapterContract):
    @pytest.fixture
    def adapter(self, a2m_client):
        return A2MAdapter(a2m_client, namespace="acme/wf-1/agent-a")

    @pytest.fixture
    def other_adapter(self, a2m_client):
        return A2MAdapter(a2m_client, namespace="acme/wf-1")
```

Because ``a2m_client`` is parametrized over every binding, so is the suite. Its rule for
namespaces: a namespace scopes an adapter's writes and deletes, never its reads. Redefining
one of its tests is refused unless declared with :func:`override_standard_test`.

:class:`ExtendedAdapterContract` (and its async twin) holds what ``a2m.adapter`` offers
beyond the four methods — ``write_many``, ``read_many``, ``delete_many`` — for an adapter
offering them too; it takes the same fixtures."""

from ._entries import ENTRY_FIELDS, META_FIELDS, as_entry, as_hits, check_entry
from ._extended_suites import AsyncExtendedAdapterContract, ExtendedAdapterContract
from ._guard import StandardTests, override_reason, override_standard_test
from ._suites import AdapterContract, AsyncAdapterContract

__all__ = [
    "ENTRY_FIELDS",
    "META_FIELDS",
    "AdapterContract",
    "AsyncAdapterContract",
    "AsyncExtendedAdapterContract",
    "ExtendedAdapterContract",
    "StandardTests",
    "as_entry",
    "as_hits",
    "check_entry",
    "override_reason",
    "override_standard_test",
]
