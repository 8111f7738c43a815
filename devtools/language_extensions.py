"""The ``AWS::LanguageExtensions`` transform as CloudFormation applies it, before the SAM transform,
so that every local reader of template.yaml sees the template CloudFormation hands to SAM.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import Any

TRANSFORM = "AWS::LanguageExtensions"
FOR_EACH = "Fn::ForEach::"
SECTIONS = ("Conditions", "Resources", "Outputs")
MAX_NESTING = 5
NOT_EXPANDED_HERE = ("Fn::Length", "Fn::ToJsonString")
_NO_VALUE = {"Ref": "AWS::NoValue"}


class LanguageExtensionsError(ValueError):
    """The template uses the transform in a way CloudFormation would refuse, or this module cannot expand."""


class _Removed:
    """What a ``Fn::FindInMap`` whose ``DefaultValue`` is ``AWS::NoValue`` leaves: nothing."""


_REMOVED = _Removed()


def uses_language_extensions(template: Mapping[str, Any]) -> bool:
    transform = template.get("Transform")
    transforms = transform if isinstance(transform, list) else [transform]
    return TRANSFORM in transforms


def expand(template: Mapping[str, Any]) -> dict[str, Any]:
    """``template`` as the transform leaves it; unchanged (a copy) without the transform."""
    result = copy.deepcopy(dict(template))
    if not uses_language_extensions(template):
        return result
    expansion = _Expansion(result)
    for section in SECTIONS:
        if section in result:
            if not isinstance(result[section], dict):
                raise LanguageExtensionsError(f"{section} must be an object")
            expanded = expansion.section(section, result[section])
            result[section] = expansion.resolve(expanded, section)
    expansion.check_loop_names(result.get("Resources", {}))
    remaining = [t for t in _transforms(template) if t != TRANSFORM]
    if remaining:
        result["Transform"] = remaining[0] if len(remaining) == 1 else remaining
    else:
        del result["Transform"]
    return result


def _transforms(template: Mapping[str, Any]) -> list[Any]:
    transform = template["Transform"]
    return list(transform) if isinstance(transform, list) else [transform]


class _Expansion:
    def __init__(self, template: Mapping[str, Any]) -> None:
        self._parameters = set(template.get("Parameters") or {})
        self._mappings: Mapping[str, Any] = template.get("Mappings") or {}
        self._loop_names: dict[int, str] = {}  # one entry per loop as written, however often it is copied

    # -- Fn::ForEach -------------------------------------------------------------------------------

    def section(self, section: str, entries: dict[str, Any]) -> dict[str, Any]:
        if section != "Resources":
            return self._object(entries, {}, section)
        return self._object(entries, {}, section, instantiate=self._resource)

    def _object(
        self,
        entries: Mapping[str, Any],
        bindings: Mapping[str, str],
        where: str,
        instantiate: Callable[[Any, Mapping[str, str], str], Any] | None = None,
    ) -> dict[str, Any]:
        """An object where loops may stand (a section, a resource's Properties, a loop's fragment):
        its loops expanded, its other entries copied with ``bindings`` applied."""
        instantiate = instantiate or self._value
        result: dict[str, Any] = {}
        for key, value in entries.items():
            if not key.startswith(FOR_EACH):
                self._put(
                    result, self._key(key, bindings, where), instantiate(value, bindings, f"{where}.{key}"), where
                )
                continue
            identifier, items, fragment = self._loop(key, value, bindings, where)
            for item in items:
                inner = {**bindings, identifier: item}
                copied = self._object(fragment, inner, f"{where}.{key}[{item}]", instantiate)
                for output_key, output in copied.items():
                    self._put(result, output_key, output, f"{where}.{key}")
        return result

    def _loop(
        self, key: str, value: Any, bindings: Mapping[str, str], where: str
    ) -> tuple[str, list[str], dict[str, Any]]:
        name = key[len(FOR_EACH) :]
        if not isinstance(value, list) or len(value) != 3:
            raise LanguageExtensionsError(f"{where}.{key}: takes [Identifier, Collection, {{OutputKey: OutputValue}}]")
        identifier, collection, fragment = value
        if not re.fullmatch(r"[A-Za-z0-9]+", name):
            raise LanguageExtensionsError(f"{where}.{key}: a loop's name is alphanumeric")
        if not isinstance(identifier, str) or not re.fullmatch(r"[A-Za-z0-9]+", identifier):
            raise LanguageExtensionsError(f"{where}.{key}: the identifier must be an alphanumeric string")
        if identifier in bindings:
            raise LanguageExtensionsError(f"{where}.{key}: identifier {identifier!r} is already an enclosing loop's")
        if identifier in self._parameters:
            raise LanguageExtensionsError(f"{where}.{key}: identifier {identifier!r} is also a parameter's name")
        if len(bindings) >= MAX_NESTING:
            raise LanguageExtensionsError(f"{where}.{key}: loops nest at most {MAX_NESTING} deep")
        if not isinstance(collection, list) or not all(isinstance(i, (str, int, float, bool)) for i in collection):
            raise LanguageExtensionsError(f"{where}.{key}: the collection must be written as a list of strings")
        if not isinstance(fragment, dict) or not fragment:
            raise LanguageExtensionsError(f"{where}.{key}: the fragment must be an object of OutputKey: OutputValue")
        for output_key in fragment:
            if not output_key.startswith(FOR_EACH) and not _names(output_key, identifier):
                raise LanguageExtensionsError(
                    f"{where}.{key}: output key {output_key!r} must contain ${{{identifier}}} or &{{{identifier}}}"
                )
        self._loop_names[id(value)] = name
        return identifier, [_item(i) for i in collection], fragment

    def _resource(self, body: Any, bindings: Mapping[str, str], where: str) -> Any:
        """A resource: loops may stand directly in its Properties."""
        if not isinstance(body, dict):
            raise LanguageExtensionsError(f"{where}: a resource must be an object")
        resource: dict[str, Any] = {}
        for attribute, value in body.items():
            if attribute == "Properties" and isinstance(value, dict):
                resource[attribute] = self._object(value, bindings, f"{where}.Properties")
            else:
                resource[attribute] = self._value(value, bindings, f"{where}.{attribute}")
        return resource

    def _value(self, value: Any, bindings: Mapping[str, str], where: str) -> Any:
        """A value copied into a loop's output, its identifiers replaced (no loop may stand here)."""
        if isinstance(value, list):
            return [self._value(item, bindings, f"{where}[{index}]") for index, item in enumerate(value)]
        if isinstance(value, str):
            for identifier in bindings:
                if _names(value, identifier):
                    raise LanguageExtensionsError(
                        f"{where}: {value!r} names the loop's identifier in a plain string; write it as"
                        f" !Sub (CloudFormation replaces an identifier in keys, Fn::Sub and Ref only)"
                    )
            return value
        if not isinstance(value, dict):
            return value
        if set(value) == {"Ref"} and isinstance(value["Ref"], str) and value["Ref"] in bindings:
            return bindings[value["Ref"]]
        if set(value) == {"Fn::Sub"}:
            return {"Fn::Sub": self._sub(value["Fn::Sub"], bindings, where)}
        result: dict[str, Any] = {}
        for key, item in value.items():
            if key.startswith(FOR_EACH):
                raise LanguageExtensionsError(
                    f"{where}: Fn::ForEach stands only in Conditions, Resources, Outputs and a resource's Properties"
                )
            if key in NOT_EXPANDED_HERE:
                raise LanguageExtensionsError(f"{where}: {key} is not expanded by devtools.language_extensions")
            self._put(result, self._key(key, bindings, where), self._value(item, bindings, f"{where}.{key}"), where)
        return result

    def _sub(self, argument: Any, bindings: Mapping[str, str], where: str) -> Any:
        if isinstance(argument, str):
            return _replace(argument, bindings, ampersand=False, where=where)
        if isinstance(argument, list) and len(argument) == 2 and isinstance(argument[0], str):
            text = _replace(argument[0], bindings, ampersand=False, where=where)
            return [text, self._value(argument[1], bindings, f"{where}.Fn::Sub[1]")]
        raise LanguageExtensionsError(f"{where}: Fn::Sub takes a string or [string, {{variables}}]")

    @staticmethod
    def _key(key: str, bindings: Mapping[str, str], where: str) -> str:
        return _replace(key, bindings, ampersand=True, where=where)

    @staticmethod
    def _put(target: dict[str, Any], key: str, value: Any, where: str) -> None:
        if key in target:
            raise LanguageExtensionsError(f"{where}: {key!r} is produced twice")
        target[key] = value

    def check_loop_names(self, resources: Mapping[str, Any]) -> None:
        names = list(self._loop_names.values())
        repeated = sorted({name for name in names if names.count(name) > 1})
        clashing = sorted(set(names) & set(resources))
        if repeated or clashing:
            raise LanguageExtensionsError(
                f"a loop's name must be unique and no resource's logical ID: {repeated + clashing}"
            )

    # -- what the transform resolves ------------------------------------------------------------------

    def resolve(self, value: Any, where: str) -> Any:
        """``Fn::Sub`` without variables as its string, ``Ref`` / ``Fn::GetAtt`` of such a Sub,
        and ``Fn::FindInMap`` of known keys as the mapping's value."""
        if isinstance(value, list):
            items = [self.resolve(item, f"{where}[{index}]") for index, item in enumerate(value)]
            return [item for item in items if item is not _REMOVED]
        if not isinstance(value, dict):
            return value
        if set(value) == {"Fn::Sub"}:
            argument = value["Fn::Sub"]
            text = argument if isinstance(argument, str) else argument[0]
            if isinstance(text, str) and "${" not in text:
                return text
            if isinstance(argument, list):
                return {"Fn::Sub": [argument[0], self.resolve(argument[1], where)]}
            return value
        if set(value) == {"Ref"} and isinstance(value["Ref"], dict):
            target = self.resolve(value["Ref"], where)
            if not isinstance(target, str):
                raise LanguageExtensionsError(f"{where}: Ref of {value['Ref']!r} does not resolve to a name")
            return {"Ref": target}
        if set(value) == {"Fn::GetAtt"} and isinstance(value["Fn::GetAtt"], list):
            return {"Fn::GetAtt": [self.resolve(part, where) for part in value["Fn::GetAtt"]]}
        if set(value) == {"Fn::FindInMap"}:
            return self._find_in_map(value["Fn::FindInMap"], where)
        result: dict[str, Any] = {}
        for key, item in value.items():
            resolved = self.resolve(item, f"{where}.{key}")
            if resolved is not _REMOVED:
                result[key] = resolved
        return result

    def _find_in_map(self, argument: Any, where: str) -> Any:
        if not isinstance(argument, list) or len(argument) not in (3, 4):
            raise LanguageExtensionsError(f"{where}: Fn::FindInMap takes [MapName, TopLevelKey, SecondLevelKey]")
        keys = [self.resolve(part, where) for part in argument[:3]]
        default: Any = None
        has_default = len(argument) == 4
        if has_default:
            option = argument[3]
            if not isinstance(option, dict) or set(option) != {"DefaultValue"}:
                raise LanguageExtensionsError(f"{where}: Fn::FindInMap's fourth argument is {{DefaultValue: ...}}")
            default = option["DefaultValue"]
        if not all(isinstance(key, (str, int)) for key in keys):
            # a key known only at deployment (a parameter, a pseudo parameter): CloudFormation's to resolve
            return {"Fn::FindInMap": [*keys, *argument[3:]]}
        name, top, second = (str(key) for key in keys)
        found = self._mappings.get(name, {}).get(top, {})
        if isinstance(found, dict) and second in found:
            return copy.deepcopy(found[second])
        if not has_default:
            raise LanguageExtensionsError(
                f"{where}: Fn::FindInMap finds no {name}.{top}.{second} and has no DefaultValue"
            )
        resolved = self.resolve(default, where)
        return _REMOVED if resolved == _NO_VALUE else resolved


def _item(value: Any) -> str:
    """A collection's items are strings; CloudFormation writes a YAML boolean in lower case."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _names(text: str, identifier: str) -> bool:
    return f"${{{identifier}}}" in text or f"&{{{identifier}}}" in text


def _replace(text: str, bindings: Mapping[str, str], *, ampersand: bool, where: str) -> str:
    for identifier, item in bindings.items():
        text = text.replace(f"${{{identifier}}}", item)
        if ampersand:
            text = text.replace(f"&{{{identifier}}}", re.sub(r"[^A-Za-z0-9]", "", item))
        elif f"&{{{identifier}}}" in text:
            raise LanguageExtensionsError(f"{where}: &{{{identifier}}} stands only in a key (CloudFormation's rule)")
    return text
