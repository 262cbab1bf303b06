"""The token parser's values: primitive steps, shapes and layouts, attribute values.

``ValueParser`` reads everything an instruction or the module header holds that is not itself
an instruction or a computation: shapes (with layouts), typed attribute values (windows,
replica groups, slices, padding, ...; kinds per ``attribute_specs.ATTRIBUTE_KINDS``) and module
attributes. ``TokenParser`` (``token_parser.py``) extends it with modules, computations and
instructions; the line parser decodes single values with it. Each ``_parse_x`` reads an x or
raises a ParseError located at the offending token, with what was expected.
"""
from __future__ import annotations

import re
from typing import Any, NoReturn

from hloscope.errors import ParseError
from hloscope.ir.attribute_specs import MODULE_ATTRIBUTE_KINDS
from hloscope.ir.attributes import (
    AliasEntry,
    BackendConfig,
    ConvolutionDimensionNumbers,
    FrontendAttributes,
    OpMetadata,
    PaddingConfig,
    RawAttribute,
    ReplicaGroups,
    Sharding,
    SliceRange,
    Window,
    WindowDimension,
    unquote,
)
from hloscope.ir.dtypes import PRIMITIVE_TYPES
from hloscope.ir.instruction import Instruction
from hloscope.ir.layout import COMBINE_DIMENSION, Layout, Tile
from hloscope.ir.module import ProgramShape
from hloscope.ir.shape import UNBOUNDED, ArrayShape, Shape, TupleShape
from hloscope.text.lexer import TokenStream

__all__ = ["ValueParser", "OPEN_BRACKETS", "CLOSE_BRACKETS", "is_int"]

#: Each opening bracket and its closing one; the closing ones.
OPEN_BRACKETS = {"{": "}", "(": ")", "[": "]"}
CLOSE_BRACKETS = frozenset(("}", ")", "]"))
# XLA's identifiers (hlo_lexer.cc): ASCII letters, digits, '_', '.', '-', not starting with a
# digit, '.' or '-'; '%' may precede a name.
_NAME_RE = re.compile(r"%?[A-Za-z_][A-Za-z0-9_.\-]*")


def is_int(tok: str) -> bool:
    """Whether a token is an integer as XLA's lexer reads one (digits, perhaps after '-')."""
    return tok.isdigit() or (tok[:1] == "-" and tok[1:].isdigit())


class ValueParser:
    """Recursive descent over the tokens of values; ``pos`` is the next token."""

    def __init__(self, ts: TokenStream) -> None:
        self.ts = ts
        self.toks = ts.toks
        self.pos = 0
        self._shape_cache: dict[tuple, ArrayShape] = {}
        self.saw_percent = False

    # --- errors and primitive steps ----------------------------------------------------------
    def error(self, message: str, at: int | None = None) -> NoReturn:
        i = self.pos if at is None else at
        tok = self.toks[i]
        if tok == "":
            message += " (found end of input)"
        raise ParseError(message, self.ts.span(i))

    def _expect(self, tok: str, what: str | None = None) -> None:
        if self.toks[self.pos] != tok:
            found = self.toks[self.pos]
            self.error(f"expected {what or repr(tok)}" + (f", found {found!r}" if found else ""))
        self.pos += 1

    def _accept(self, tok: str) -> bool:
        if self.toks[self.pos] == tok:
            self.pos += 1
            return True
        return False

    def _name(self, what: str = "a name") -> str:
        tok = self.toks[self.pos]
        if _NAME_RE.fullmatch(tok) is None:
            self.error(f"expected {what}" + (f", found {tok!r}" if tok else ""))
        self.pos += 1
        if self.toks[self.pos] == ":" and not self.ts.ws(self.pos):
            # XLA's lexer reads `name:` as a name token wherever a name may stand (`HloModule m:`).
            self.pos += 1
        if tok[0] == "%":
            self.saw_percent = True
            return tok[1:]
        return tok

    def _string(self, what: str) -> str:
        """A quoted string token, returned with its quotes."""
        tok = self.toks[self.pos]
        if not tok.startswith('"'):
            self.error(f"expected {what}" + (f", found {tok!r}" if tok else ""))
        if len(tok) < 2 or not tok.endswith('"'):
            self.error("unterminated string: expected a closing '\"' on this line")
        self.pos += 1
        return tok

    def _int(self, what: str = "an integer") -> int:
        tok = self.toks[self.pos]
        if not is_int(tok):
            self.error(f"expected {what}" + (f", found {tok!r}" if tok else ""))
        self.pos += 1
        return int(tok)

    def _skip_balanced(self) -> int:
        """Skip one token or a bracketed group; returns the index after it."""
        toks = self.toks
        i = self.pos
        tok = toks[i]
        if tok in OPEN_BRACKETS:
            stack = [OPEN_BRACKETS[tok]]
            i += 1
            while stack:
                t = toks[i]
                if t == "":
                    self.error(f"unbalanced {tok!r}: no matching {stack[-1]!r}", self.pos)
                if t in OPEN_BRACKETS:
                    stack.append(OPEN_BRACKETS[t])
                elif t in CLOSE_BRACKETS:
                    if t != stack[-1]:
                        self.error(f"expected {stack[-1]!r}, found {t!r}", i)
                    stack.pop()
                i += 1
            self.pos = i
            return i
        if tok == "" or tok in CLOSE_BRACKETS:
            self.error("expected a value")
        self.pos = i + 1
        return i + 1

    def _raw_value(self) -> str:
        """Text of an attribute value we do not type: a bracketed group or token, continued by
        tokens written against it (``[2,4]<=[8]T(1,0)``, ``b01f_01io->b01f``) or by further
        bracketed groups (``mesh[...] {...}``), up to a top-level ',' or the end of the line's
        instruction."""
        toks = self.toks
        ws = self.ts.ws
        start = self.pos
        self._skip_balanced()
        while True:
            t = toks[self.pos]
            if t in ("", ",", "}", ")", "]", "ROOT") or toks[self.pos + 1] == "=":
                break
            if ws(self.pos) and t not in OPEN_BRACKETS:
                break
            if ws(self.pos) and "\n" in ws(self.pos):
                break
            self._skip_balanced()
        return self.ts.text(start, self.pos)

    # --- shapes and layouts --------------------------------------------------------------------
    def parse_shape(self) -> Shape:
        toks = self.toks
        tok = toks[self.pos]
        if tok == "(":
            self.pos += 1
            elements: list[Shape] = []
            if toks[self.pos] != ")":
                while True:
                    elements.append(self.parse_shape())
                    if not self._accept(","):
                        break
            self._expect(")", "',' or ')' in tuple shape")
            return TupleShape(tuple(elements))
        if tok == "b" and toks[self.pos + 1] == "(":  # a buffer shape: b(f32[16])
            at = self.pos
            self.pos += 2
            inner = self.parse_shape()
            if not isinstance(inner, ArrayShape) or inner.buffer:
                self.error("a buffer shape holds an array shape", at)
            self._expect(")", "')' to close the buffer shape")
            return ArrayShape(inner.element_type, inner.dimensions, inner.dynamic, inner.layout, True)
        if tok not in PRIMITIVE_TYPES:
            self.error("expected a shape such as f32[2,3]{1,0}" + (f", found {tok!r}" if tok else ""))
        p = self.pos + 1
        if toks[p] != "[":
            self.error("expected '[' after element type", p)
        # Fast path: static dimensions and a plain or tiled layout, cached by its tokens.
        j = p + 1
        while toks[j] != "]":
            j += 1
            if toks[j] == "":
                self.error("expected ']' to close the dimensions", p)
        has_layout = toks[j + 1] == "{" and (is_int(toks[j + 2]) or toks[j + 2] in (":", "}"))
        end = j + 1
        if has_layout:
            end = j + 2
            depth = 1
            while depth:
                t = toks[end]
                if t == "{" or t == "(":
                    depth += 1
                elif t == "}" or t == ")":
                    depth -= 1
                elif t == "":
                    self.error("expected '}' to close the layout", j + 1)
                end += 1
        key = tuple(toks[self.pos : end])
        cached = self._shape_cache.get(key)
        if cached is not None:
            self.pos = end
            return cached
        self.pos = p + 1
        dims: list[int] = []
        dynamic: list[bool] = []
        any_dynamic = False
        if toks[self.pos] != "]":
            while True:
                t = toks[self.pos]
                if t == "?":
                    dims.append(UNBOUNDED)
                    dynamic.append(True)
                    any_dynamic = True
                    self.pos += 1
                elif t == "<=":
                    self.pos += 1
                    dims.append(self._int("a dimension bound"))
                    dynamic.append(True)
                    any_dynamic = True
                else:
                    dims.append(self._int("a dimension size, '<=' bound or '?'"))
                    dynamic.append(False)
                if not self._accept(","):
                    break
        self._expect("]", "',' or ']' in dimensions")
        layout = self._parse_layout(len(dims)) if has_layout else None
        shape = ArrayShape(tok, tuple(dims), tuple(dynamic) if any_dynamic else (), layout)
        self._shape_cache[key] = shape
        return shape

    def _parse_layout(self, rank: int) -> Layout:
        self._expect("{")
        toks = self.toks
        m2m: list[int] = []
        while is_int(toks[self.pos]):
            m2m.append(int(toks[self.pos]))
            self.pos += 1
            if not self._accept(","):
                break
        fields: dict[str, Any] = {}
        if self._accept(":"):
            while toks[self.pos] != "}":
                t = toks[self.pos]
                if t == "T" or (t.startswith("T") and False):
                    self.pos += 1
                    tiles = []
                    while toks[self.pos] == "(":
                        self.pos += 1
                        tdims = []
                        while toks[self.pos] != ")":
                            if toks[self.pos] == "*":
                                tdims.append(COMBINE_DIMENSION)
                                self.pos += 1
                            else:
                                tdims.append(self._int("a tile dimension"))
                            self._accept(",")
                        self.pos += 1
                        tiles.append(Tile(tuple(tdims)))
                    fields["tiles"] = tuple(tiles)
                elif t in ("E", "S", "L", "M"):
                    self.pos += 1
                    self._expect("(")
                    val = self._int()
                    self._expect(")")
                    key = {"E": "element_size_bits", "S": "memory_space", "L": "tail_padding_alignment",
                           "M": "dynamic_shape_metadata_prefix_bytes"}[t]
                    fields[key] = val
                elif t in ("D", "SC", "P", "#", "*"):
                    self.pos += 1
                    if toks[self.pos] != "(":
                        self.error(f"expected '(' after {t!r} in layout")
                    start = self.pos + 1
                    self._skip_balanced()
                    raw = self.ts.text(start, self.pos - 1)
                    if t == "D":
                        fields["dim_level_types"] = raw
                    elif t == "SC":
                        fields["split_configs"] = fields.get("split_configs", ()) + (raw,)
                    elif t == "P":
                        fields["physical_shape"] = raw
                    elif t == "#":
                        fields["index_primitive_type"] = raw
                    else:
                        fields["pointer_primitive_type"] = raw
                else:
                    self.error("expected a layout field (T, E, S, L, D, SC, P, M, #, *)")
        self._expect("}", "'}' to close the layout")
        if m2m and len(m2m) != rank:
            self.error(f"layout has {len(m2m)} dimensions but the shape has rank {rank}", self.pos - 1)
        return Layout(tuple(m2m), **fields)


    def parse_module_attr(self, key: str) -> Any:
        kind = MODULE_ATTRIBUTE_KINDS.get(key)
        toks = self.toks
        if kind == "bool":
            return self._parse_bool()
        if kind == "int":
            return self._int()
        if kind == "io_alias":
            self._expect("{")
            entries = []
            while toks[self.pos] != "}":
                out_index = self._parse_int_tuple()
                self._expect(":")
                self._expect("(")
                param = self._int("a parameter number")
                self._expect(",")
                p_index = self._parse_int_tuple()
                kind_text = ""
                if self._accept(","):
                    kind_text = self._name("may-alias or must-alias")
                self._expect(")")
                entries.append(AliasEntry(out_index, param, p_index, kind_text))
                if not self._accept(","):
                    break
            self._expect("}", "'}' to close input_output_alias")
            return entries
        if kind == "buffer_donor":
            self._expect("{")
            donors = []
            while toks[self.pos] != "}":
                self._expect("(")
                param = self._int("a parameter number")
                self._expect(",")
                donors.append((param, self._parse_int_tuple()))
                self._expect(")")
                if not self._accept(","):
                    break
            self._expect("}", "'}' to close buffer_donor")
            return donors
        if kind == "program_shape":
            self._expect("{")
            self._expect("(")
            params: list[Shape] = []
            if toks[self.pos] != ")":
                while True:
                    params.append(self.parse_shape())
                    if not self._accept(","):
                        break
            self._expect(")")
            self._expect("->")
            result = self.parse_shape()
            self._expect("}")
            return ProgramShape(params, result)
        if kind == "frontend_attributes":
            return FrontendAttributes(self.ts.text(self.pos, self._skip_balanced()))
        return RawAttribute(self._raw_value())

    def _parse_int_tuples(self) -> tuple[tuple[int, ...], ...]:
        self._expect("{")
        groups = []
        while self.toks[self.pos] == "{":
            groups.append(self._parse_int_tuple())
            if not self._accept(","):
                break
        self._expect("}")
        return tuple(groups)

    def _parse_int_tuple(self) -> tuple[int, ...]:
        self._expect("{")
        out = []
        while self.toks[self.pos] != "}":
            out.append(self._int())
            if not self._accept(","):
                break
        self._expect("}")
        return tuple(out)


    # --- attribute values ----------------------------------------------------------------------
    def _parse_bool(self) -> bool:
        tok = self.toks[self.pos]
        if tok not in ("true", "false"):
            self.error("expected true or false")
        self.pos += 1
        return tok == "true"

    def parse_attr(self, kind: str, key: str, inst: Instruction, key_at: int) -> Any:
        toks = self.toks
        if kind == "int":
            return self._int(f"an integer for {key}")
        if kind == "bool":
            return self._parse_bool()
        if kind == "ints":
            if toks[self.pos] == "{" and toks[self.pos + 1] == "{":
                # A list per operand (slice_sizes of a combined collective-permute).
                return self._parse_int_tuples()
            return self._parse_int_tuple()
        if kind == "ident":
            return self._name(f"a value for {key}")
        if kind == "string":
            return unquote(self._string(f"a quoted string for {key}"))
        if kind == "window":
            return self._parse_window()
        if kind == "dim_labels":
            # The labels are the tokens written against each other (`?` lexes on its own).
            start = self.pos
            self.pos += 1
            while toks[self.pos] not in ("", ",", "}", ")") and not self.ts.ws(self.pos):
                self.pos += 1
            text = self.ts.text(start, self.pos)
            try:
                return ConvolutionDimensionNumbers.from_labels(text)
            except ValueError as e:
                self.error(str(e), start)
        if kind == "slice":
            self._expect("{")
            ranges = []
            while toks[self.pos] == "[":
                self.pos += 1
                a = self._int("a slice start")
                self._expect(":")
                b = self._int("a slice limit")
                s = 1
                if self._accept(":"):
                    s = self._int("a slice stride")
                self._expect("]")
                ranges.append(SliceRange(a, b, s))
                if not self._accept(","):
                    break
            self._expect("}", "'}' to close slice")
            return tuple(ranges)
        if kind == "padding":
            tok = toks[self.pos]
            try:
                dims = []
                for part in tok.split("x"):
                    nums = [int(v) for v in _split_underscores(part)]
                    if len(nums) == 2:
                        nums.append(0)
                    if len(nums) != 3:
                        raise ValueError
                    dims.append((nums[0], nums[1], nums[2]))
            except ValueError:
                self.error("expected padding like 0_0x1_1 (low_high[_interior] per dimension)")
            self.pos += 1
            return PaddingConfig(tuple(dims))
        if kind == "metadata":
            return OpMetadata(self.ts.text(self.pos, self._skip_balanced()))
        if kind == "frontend_attributes":
            return FrontendAttributes(self.ts.text(self.pos, self._skip_balanced()))
        if kind == "sharding":
            if toks[self.pos] != "{":
                self.error("expected '{' to open a sharding")
            return Sharding(self.ts.text(self.pos, self._skip_balanced()))
        if kind == "backend_config":
            tok = toks[self.pos]
            if tok.startswith('"'):
                return BackendConfig(self._string("a quoted backend_config"))
            if tok == "{":
                return BackendConfig(self.ts.text(self.pos, self._skip_balanced()))
            self.error("expected a quoted string or a JSON object for backend_config")
        if kind == "replica_groups":
            return self._parse_replica_groups()
        if kind == "intss":
            return self._parse_int_tuples()
        if kind == "precision":
            self._expect("{")
            vals = []
            while toks[self.pos] != "}":
                vals.append(self._name("a precision"))
                if not self._accept(","):
                    break
            self._expect("}")
            return tuple(vals)
        if kind == "bools":
            if toks[self.pos] != "{":
                return (self._parse_bool(),)
            self.pos += 1
            bools = []
            while toks[self.pos] != "}":
                bools.append(self._parse_bool())
                if not self._accept(","):
                    break
            self._expect("}")
            return tuple(bools)
        if kind == "shapes":
            self._expect("{")
            shapes = []
            while toks[self.pos] != "}":
                shapes.append(self.parse_shape())
                if not self._accept(","):
                    break
            self._expect("}")
            return tuple(shapes)
        if kind == "literal":
            # `shape value` (the value a token or a braced group), or a parenthesized tuple of them.
            start = self.pos
            if toks[self.pos] != "(":
                self.parse_shape()
            self._skip_balanced()
            return RawAttribute(self.ts.text(start, self.pos))
        return RawAttribute(self._raw_value())

    def _parse_window(self) -> Window:
        start = self.pos
        self._expect("{", "'{' to open the window")
        toks = self.toks
        fields: dict[str, list[str]] = {}
        while toks[self.pos] != "}":
            key_at = self.pos
            key = self._name("a window field (size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal)")
            if key not in ("size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal"):
                self.error(f"unknown window field {key!r}", key_at)
            self._expect("=")
            fields[key] = toks[self.pos].split("x")
            self.pos += 1
        self.pos += 1
        if not fields:
            return Window(())
        if "size" not in fields:
            self.error("a window needs size=", start)
        n = len(fields["size"])
        try:
            def col(key: str, default: int) -> list[int]:
                vals = fields.get(key)
                if vals is None:
                    return [default] * n
                if len(vals) != n:
                    raise ValueError
                return [int(v) for v in vals]

            sizes, strides = col("size", 1), col("stride", 1)
            lhs, rhs, rev = col("lhs_dilate", 1), col("rhs_dilate", 1), col("rhs_reversal", 0)
            pads = [(0, 0)] * n
            if "pad" in fields:
                if len(fields["pad"]) != n:
                    raise ValueError
                pads = []
                for p in fields["pad"]:
                    lo, hi = _split_underscores(p)
                    pads.append((int(lo), int(hi)))
        except ValueError:
            self.error(f"malformed window: every field needs one value per dimension ({n} in size=)", start)
        return Window(tuple(
            WindowDimension(sizes[i], strides[i], pads[i][0], pads[i][1], rhs[i], lhs[i], bool(rev[i]))
            for i in range(n)
        ))

    def _parse_replica_groups(self) -> ReplicaGroups:
        toks = self.toks
        if toks[self.pos] == "{":
            self.pos += 1
            groups = []
            while toks[self.pos] == "{":
                groups.append(self._parse_int_tuple())
                if not self._accept(","):
                    break
            self._expect("}", "'}' to close replica_groups")
            return ReplicaGroups(groups=tuple(groups))
        if toks[self.pos] == "[":
            start = self.pos
            self.pos += 1
            a = self._int()
            self._expect(",")
            b = self._int()
            self._expect("]")
            self._expect("<=", "'<=' in iota replica groups")
            reshape = self._parse_bracket_ints()
            perm: tuple[int, ...] = ()
            if toks[self.pos] == "T":
                self.pos += 1
                self._expect("(")
                perm_l = []
                while toks[self.pos] != ")":
                    perm_l.append(self._int())
                    self._accept(",")
                self.pos += 1
                perm = tuple(perm_l)
            rg = ReplicaGroups(iota_shape=(a, b), iota_reshape=reshape, iota_transpose=perm)
            if a * b != _prod(reshape):
                self.error("iota replica groups: group shape and reshape sizes differ", start)
            return rg
        # mesh['a'=2,'b'=4] {'a'} and other newer spellings: kept as text.
        return ReplicaGroups(text=self._raw_value())

    def _parse_bracket_ints(self) -> tuple[int, ...]:
        self._expect("[")
        out = []
        while self.toks[self.pos] != "]":
            out.append(self._int())
            if not self._accept(","):
                break
        self._expect("]")
        return tuple(out)


def _split_underscores(part: str) -> list[str]:
    # "-1_-2_0" -> ["-1", "-2", "0"]
    out, cur = [], ""
    for ch in part:
        if ch == "_":
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def _prod(xs: tuple[int, ...]) -> int:
    p = 1
    for x in xs:
        p *= x
    return p
