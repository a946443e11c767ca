"""The protocol registry. Each protocol is one module of this package exporting `SPEC`, a
`ProtocolSpec` (see protocols/base.py for every field); the apps ask `get(name)` / `for_kind(kind)`
and never branch on a protocol's name.

The package imports nothing from the apps (the one library it uses is pydantic, for the content schemas),
so every app may ask it — `items` included.

Adding a protocol:
1. Write `protocols/<name>.py`: its item content schema (an `ItemContent` subclass), its questions and phases, blind and hidden fields, gold values and
   verdict map, binary collapse if any, queue rules and suggestions (pure functions over answer
   dicts), answer-file format, council prompt, the figures its agreement reports, and the templates
   and panels its pages include; export it as `SPEC`.
2. Add the module to PROTOCOL_MODULES below (choices of Item.kind and Campaign.protocol follow from
   the registry: no migration).
3. Write its templates (the annotator's item page; the adjudicator's item partial; its agreement
   partial) and, if its items come in a new file format, the importer its spec names.
4. Test it under tests/protocols/ (tests/protocols/test_new_protocol.py shows one end to end).
"""

from importlib import import_module

from protocols.base import Benchmark, ProtocolSpec, Question

PROTOCOL_MODULES = ("protocols.twist_b", "protocols.lapse", "protocols.judged", "protocols.twist_c")

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


def specs() -> tuple[ProtocolSpec, ...]:
    """Every registered protocol, in registration order."""
    return tuple(REGISTRY.values())


def protocol_choices() -> list[tuple[str, str]]:
    return [(spec.name, spec.label) for spec in REGISTRY.values()]


def kind_choices() -> list[tuple[str, str]]:
    return [(spec.item_kind, spec.item_kind_label) for spec in REGISTRY.values()]


__all__ = [
    "Benchmark", "ProtocolSpec", "Question", "UnknownProtocol", "blind_view", "for_kind", "get", "kind_choices",
    "of_item", "protocol_choices", "specs",
]
