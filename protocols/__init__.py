"""The protocol registry. Each protocol is one module of this package exporting `SPEC`; adding a
protocol means adding its module to PROTOCOL_MODULES (and its templates and tests), nothing else.

See docs/architecture.md for the steps.
"""

from importlib import import_module

from protocols.base import Benchmark, ProtocolSpec, Question

PROTOCOL_MODULES = ("protocols.twist_b", "protocols.lapse")

REGISTRY: dict[str, ProtocolSpec] = {}
BY_KIND: dict[str, ProtocolSpec] = {}
for _module in PROTOCOL_MODULES:
    _spec = import_module(_module).SPEC
    REGISTRY[_spec.name] = _spec
    BY_KIND[_spec.item_kind] = _spec


class UnknownProtocol(LookupError):
    pass


def get(name: str) -> ProtocolSpec:
    """The spec of a campaign's protocol."""
    try:
        return REGISTRY[str(name)]
    except KeyError:
        raise UnknownProtocol(f"unknown protocol '{name}' (known: {', '.join(REGISTRY)})") from None


def for_kind(kind: str) -> ProtocolSpec:
    """The spec that annotates items of this kind."""
    try:
        return BY_KIND[str(kind)]
    except KeyError:
        raise UnknownProtocol(f"no protocol annotates items of kind '{kind}' (known: {', '.join(BY_KIND)})") from None


def of_item(item) -> ProtocolSpec:
    return for_kind(item.kind)


def blind_view(item) -> dict:
    """The one place an item becomes what an annotator may see."""
    return for_kind(item.kind).blind_view(item)


def protocol_choices() -> list[tuple[str, str]]:
    return [(spec.name, spec.label) for spec in REGISTRY.values()]


def kind_choices() -> list[tuple[str, str]]:
    return [(spec.item_kind, spec.item_kind_label) for spec in REGISTRY.values()]


__all__ = ["Benchmark", "ProtocolSpec", "Question", "UnknownProtocol", "blind_view", "for_kind", "get", "of_item"]
