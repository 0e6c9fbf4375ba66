"""Validate a document against ``docs/junit.xsd`` with the standard library (no schema validator is among the pinned
dependencies, and lxml is not worth adding for one test): the schema is read with ElementTree and the part of XML
Schema it uses is interpreted here: global and local element declarations, ``ref``, ``minOccurs`` / ``maxOccurs``,
``xs:sequence`` and ``xs:choice`` content, attributes with ``use="required"``, ``xs:simpleContent`` extensions, and
the simple types ``xs:string``, ``xs:int``, ``xs:decimal``, ``xs:dateTime`` and their ``minInclusive``
restrictions. Anything else in the schema is an error here, so the schema cannot grow past what is checked."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

XS = "{http://www.w3.org/2001/XMLSchema}"
SCHEMA = Path(__file__).resolve().parent.parent / "docs" / "junit.xsd"
UNBOUNDED = 1 << 30
DATETIME = re.compile(r"-?\d{4,}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")


class Invalid(AssertionError):
    """The document does not match the schema; the message says where."""


@dataclass
class Simple:
    base: str  # xs:string, xs:int, xs:decimal, xs:dateTime
    minimum: Decimal | None = None

    def check(self, value: str, where: str) -> None:
        if self.base == "xs:string":
            return
        if self.base == "xs:dateTime":
            if not DATETIME.fullmatch(value):
                raise Invalid(f"{where}: {value!r} is no xs:dateTime")
            return
        try:
            n = Decimal(value)
        except InvalidOperation:
            raise Invalid(f"{where}: {value!r} is no {self.base}") from None
        if self.base == "xs:int" and (n != n.to_integral_value() or "." in value or not -2**31 <= n < 2**31):
            raise Invalid(f"{where}: {value!r} is no xs:int")
        if self.minimum is not None and n < self.minimum:
            raise Invalid(f"{where}: {value} is below {self.minimum}")


@dataclass
class Complex:
    attributes: dict[str, tuple[Simple, bool]] = field(default_factory=dict)  # name -> (type, required)
    text: bool = False  # simpleContent: text, no child elements
    kind: str = "empty"  # "sequence", "choice" or "empty"
    particles: list[tuple[str, int, int]] = field(default_factory=list)  # (element name, min, max)
    group: tuple[int, int] = (1, 1)  # a choice's own occurrences
    local: dict[str, Element] = field(default_factory=dict)


@dataclass
class Element:
    name: str
    type: Simple | Complex


class Schema:
    def __init__(self, path: Path = SCHEMA) -> None:
        root = ET.parse(path).getroot()
        self.simple: dict[str, Simple] = {"xs:string": Simple("xs:string"), "xs:int": Simple("xs:int"),
                                          "xs:decimal": Simple("xs:decimal"), "xs:dateTime": Simple("xs:dateTime")}
        self.complex: dict[str, Complex] = {}
        self.elements: dict[str, Element] = {}
        for node in root:
            tag = node.tag.removeprefix(XS)
            if tag == "simpleType":
                self.simple[node.attrib["name"]] = self._simple(node)
            elif tag == "complexType":
                self.complex[node.attrib["name"]] = self._complex(node)
        for node in root:
            if node.tag == XS + "element":
                self.elements[node.attrib["name"]] = self._element(node)
            elif node.tag.removeprefix(XS) not in ("simpleType", "complexType"):
                raise Invalid(f"the schema uses {node.tag}, which this checker does not interpret")

    def _simple(self, node: ET.Element) -> Simple:
        (r,) = list(node)
        if r.tag != XS + "restriction":
            raise Invalid(f"simpleType {node.attrib.get('name')}: only restrictions")
        t = Simple(r.attrib["base"])
        for facet in r:
            if facet.tag != XS + "minInclusive":
                raise Invalid(f"facet {facet.tag} not interpreted")
            t.minimum = Decimal(facet.attrib["value"])
        return t

    def _type(self, name: str) -> Simple | Complex:
        if name in self.simple:
            return self.simple[name]
        if name in self.complex:
            return self.complex[name]
        raise Invalid(f"unknown type {name}")

    def _element(self, node: ET.Element) -> Element:
        name = node.attrib["name"]
        if "type" in node.attrib:
            return Element(name, self._type(node.attrib["type"]))
        inner = [c for c in node if c.tag == XS + "complexType"]
        return Element(name, self._complex(inner[0]) if inner else Complex())

    def _complex(self, node: ET.Element) -> Complex:
        t = Complex()
        for child in node:
            tag = child.tag.removeprefix(XS)
            if tag == "attribute":
                t.attributes[child.attrib["name"]] = (self.simple[child.attrib.get("type", "xs:string")],
                                                      child.attrib.get("use") == "required")
            elif tag in ("sequence", "choice"):
                t.kind = tag
                t.group = (_occurs(child, "minOccurs"), _occurs(child, "maxOccurs"))
                for p in child:
                    if p.tag != XS + "element":
                        raise Invalid(f"particle {p.tag} not interpreted")
                    name = p.attrib.get("ref") or p.attrib["name"]
                    if "ref" not in p.attrib:
                        t.local[name] = self._element(p)
                    t.particles.append((name, _occurs(p, "minOccurs"), _occurs(p, "maxOccurs")))
            elif tag == "simpleContent":
                (ext,) = list(child)
                if ext.tag != XS + "extension" or ext.attrib["base"] != "xs:string":
                    raise Invalid("simpleContent: only extensions of xs:string")
                t.text = True
                for a in ext:
                    t.attributes[a.attrib["name"]] = (self.simple[a.attrib.get("type", "xs:string")],
                                                      a.attrib.get("use") == "required")
            else:
                raise Invalid(f"complexType part {tag} not interpreted")
        return t

    # -------------------------------------------------------------------------------------------- validation

    def validate(self, doc: bytes | str) -> ET.Element:
        root = ET.fromstring(doc)
        if root.tag not in self.elements:
            raise Invalid(f"root <{root.tag}> is no global element of the schema")
        self._check(root, self.elements[root.tag], root.tag)
        return root

    def _decl(self, name: str, owner: Complex) -> Element:
        return owner.local.get(name) or self.elements[name]

    def _check(self, el: ET.Element, decl: Element, where: str) -> None:
        t = decl.type
        children = list(el)
        if isinstance(t, Simple):
            if children or el.attrib:
                raise Invalid(f"{where}: a simple element with children or attributes")
            t.check(el.text or "", where)
            return
        for name, value in el.attrib.items():
            if name not in t.attributes:
                raise Invalid(f"{where}: attribute {name!r} is not in the schema")
            t.attributes[name][0].check(value, f"{where}@{name}")
        for name, (_, required) in t.attributes.items():
            if required and name not in el.attrib:
                raise Invalid(f"{where}: required attribute {name!r} missing")
        if t.text:
            if children:
                raise Invalid(f"{where}: text-only element has child elements")
            return
        if (el.text or "").strip() or any((c.tail or "").strip() for c in children):
            raise Invalid(f"{where}: text in element-only content")
        if t.kind == "sequence":
            i = 0
            for name, lo, hi in t.particles:
                n = 0
                while i < len(children) and children[i].tag == name and n < hi:
                    self._check(children[i], self._decl(name, t), f"{where}/{name}[{n}]")
                    i, n = i + 1, n + 1
                if n < lo:
                    raise Invalid(f"{where}: {lo} <{name}> needed, {n} found")
            if i < len(children):
                raise Invalid(f"{where}: <{children[i].tag}> not allowed here")
        elif t.kind == "choice":
            names = {name for name, _, _ in t.particles}
            for k, c in enumerate(children):
                if c.tag not in names:
                    raise Invalid(f"{where}: <{c.tag}> not allowed (one of {sorted(names)})")
                self._check(c, self._decl(c.tag, t), f"{where}/{c.tag}[{k}]")
            lo, hi = t.group
            if not lo <= len(children) <= hi:
                raise Invalid(f"{where}: {len(children)} children, the choice allows {lo}..{hi}")
        elif children:
            raise Invalid(f"{where}: an empty element with children")


def _occurs(node: ET.Element, name: str) -> int:
    v = node.attrib.get(name, "1")
    return UNBOUNDED if v == "unbounded" else int(v)
