"""Write a tuned config into a kernel source: the tunable declarations get the new values.

A kernel declares each tunable once, as a plain declaration at the start of a line::

    int tile_m = 64;                      constexpr uint32_t TILE_M = 64U;
    static constexpr int32_t kTileM{64};  const bool L1_PREFETCH = true;
    #define TILE_M 64                     #define TILE_M (64)

Only the literal is replaced (its suffix, base and parentheses kept); comments,
strings and every other byte stay as they were, and a generated header comment
records the study, the config and the gain. Values are validated by
:mod:`aoe_optuna.space.params` and written as literals only: an integer, ``true`` /
``false`` / ``1`` / ``0``, a choice name as a string literal, or an enum constant
whose spelling is derived from the one already there (``LAYOUT_ROW_MAJOR`` ->
``LAYOUT_Z_MAJOR``). ``opt_level`` and ``schedule`` are compile options, not
source constants: they go into the header comment and a build-flags line, the
flags the npu backend builds its kernel with (:mod:`aoe_optuna.backends.npu.compile_flags`
holds that table, :mod:`aoe_optuna.backends.npu.simple_gemm.kernel` the names the shipped
kernel declares its tunables under).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aoe_optuna.atomic_write import write_atomic
from aoe_optuna.backends.npu.compile_flags import BUILD_OPTIONS
from aoe_optuna.backends.npu.compile_flags import build_flags as _build_flags
from aoe_optuna.backends.npu.simple_gemm.kernel import KERNEL_CONSTANTS
from aoe_optuna.space.params import KNOWN_PARAMS, ParamError, canonical_value, to_code
from aoe_optuna.study.storage.redact import redact_url

COMPILE_OPTIONS = BUILD_OPTIONS
HEADER_BEGIN = "// ---- aoe-tune export: generated, replaced on the next export ----"
HEADER_END = "// ---- end of aoe-tune export ----"

_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
_NOT_TYPES = frozenset((
    "return", "else", "case", "goto", "using", "typedef", "throw", "co_return", "co_yield", "do",
    "new", "delete", "sizeof", "namespace", "struct", "class", "enum", "union", "template",
))
_SPECIFIERS = r"(?:(?:static|inline|constexpr|const|constinit|volatile|extern)[ \t]+)*"
_TYPE = r"(?:(?:unsigned|signed|long|short)[ \t]+)*[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*"
_INT_LITERAL = re.compile(r"(?P<digits>0[xX][0-9a-fA-F]+|[1-9][0-9]*|0)(?P<suffix>[uUlL]{0,3})\Z")
_QUALIFIED = re.compile(r"[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*\Z")
_RAW_OPEN = re.compile(r'"([^()\\\s"]{0,16})\(')  # R"delim(
_RAW_PREFIX = re.compile(r"(?:^|[^\w])(?:u8|[uUL])?R\Z")
# Range of the fixed-size integer types a tile constant is commonly declared with.
_TYPE_RANGES = {
    "int8_t": (-(2**7), 2**7 - 1), "uint8_t": (0, 2**8 - 1),
    "int16_t": (-(2**15), 2**15 - 1), "uint16_t": (0, 2**16 - 1),
    "int32_t": (-(2**31), 2**31 - 1), "uint32_t": (0, 2**32 - 1),
    "int": (-(2**31), 2**31 - 1), "unsigned": (0, 2**32 - 1), "unsigned int": (0, 2**32 - 1),
    "int64_t": (-(2**63), 2**63 - 1), "uint64_t": (0, 2**64 - 1), "size_t": (0, 2**64 - 1),
}


class ExportError(ValueError):
    """The source and the config do not fit; one line naming the file and the parameter."""


@dataclass(frozen=True)
class ExportInfo:
    """Where a config came from, for the header comment of the exported source."""

    study: str
    storage: str | None = None
    trial: int | None = None
    value: float | None = None
    baseline: float | None = None
    objective: str = "tokens/s"

    @property
    def gain(self) -> float | None:
        """Relative gain over the baseline (0.25 = 25 % more), when both values are known."""
        if self.value is None or not self.baseline:
            return None
        return self.value / self.baseline - 1.0


@dataclass(frozen=True)
class Change:
    """One rewritten declaration: where it is and what its value was and became."""

    param: str
    name: str  # the identifier in the source (TILE_M, kTileM, ...)
    form: str  # "define" or "variable"
    line: int  # 1-based line in the text that was given
    new_line: int  # 1-based line in the rewritten text
    old: str  # the old value as it was written
    new: str  # the new value as it is written now

    @property
    def changed(self) -> bool:
        return self.old != self.new


@dataclass(frozen=True)
class RewriteResult:
    """The rewritten source, what changed, and the options that belong to the build."""

    text: str
    changes: tuple[Change, ...]
    compile_options: dict[str, Any] = field(default_factory=dict)
    build_flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Literal:
    kind: str  # "int", "bool", "ident", "string"
    text: str  # as written (for a string: its contents)
    start: int  # span of the replaceable part in the source text
    end: int
    suffix: str = ""
    hex: bool = False


@dataclass(frozen=True)
class _Declaration:
    name: str
    form: str
    type: str | None
    line: int
    literal: _Literal | None  # None: the value is not a plain literal
    value_text: str


def rewrite_source(
    text: str,
    config: Mapping[str, Any],
    *,
    aliases: Mapping[str, str | Sequence[str]] | None = None,
    info: ExportInfo | None = None,
    source_name: str = "<source>",
) -> RewriteResult:
    """Replace the value of every tunable ``config`` names in ``text``.

    ``aliases`` maps a parameter to the identifier(s) it has in this source and
    replaces the default names (``tile_m``, ``TILE_M``, ``kTileM``). Rewriting an
    exported text again replaces its header, so the same config gives the same text.
    """
    constants, options = _split_config(config, source_name)
    body, old_header_lines = _strip_header(text)
    newline = "\r\n" if "\r\n" in text else "\n"
    masked = _mask(body)
    names_of = _candidate_names(constants, aliases, source_name)

    header = export_header(config_text(constants, options), options, info, newline)
    shift = header.count(newline) - old_header_lines
    edits: list[tuple[int, int, str]] = []
    changes: list[Change] = []
    for param, value in constants.items():
        decl = _find_one(body, masked, param, names_of[param], source_name)
        if decl.literal is None:
            raise ExportError(
                f"{source_name}:{decl.line}: {decl.name} ({param}) is set to "
                f"{decl.value_text!r}, not a plain literal; write a number or name there"
            )
        new = _new_literal(param, value, decl, source_name)
        edits.append((decl.literal.start, decl.literal.end, new))
        changes.append(Change(param, decl.name, decl.form, decl.line + old_header_lines,
                              decl.line + old_header_lines + shift,
                              _as_written(decl.literal), new + decl.literal.suffix))
    for start, end, new in sorted(edits, reverse=True):
        body = body[:start] + new + body[end:]
    return RewriteResult(
        text=_with_bom(text, header + body),
        changes=tuple(sorted(changes, key=lambda c: c.line)),
        compile_options=options,
        build_flags=build_flags(options),
    )


def export_kernel(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    config: Mapping[str, Any],
    *,
    aliases: Mapping[str, str | Sequence[str]] | None = None,
    info: ExportInfo | None = None,
) -> RewriteResult:
    """Read ``source``, rewrite it with ``config`` and write ``output`` atomically."""
    try:
        with open(source, encoding="utf-8", newline="") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ExportError(f"{source}: cannot read the kernel source: {exc}") from None
    result = rewrite_source(text, config, aliases=aliases, info=info, source_name=str(source))
    write_atomic(Path(output), result.text)
    return result


def build_flags(options: Mapping[str, Any]) -> tuple[str, ...]:
    """The kernel compiler's flags for the compile options given (``opt_level`` -> ``-O2``,
    ``schedule`` -> its ``-mllvm -misched=...``), as the npu backend builds with them."""
    return _build_flags(options)


def config_text(*parts: Mapping[str, Any]) -> str:
    """``name=value`` pairs, booleans as true/false, in the order given."""
    out = []
    for part in parts:
        for name, value in part.items():
            shown = str(value).lower() if isinstance(value, bool) else str(value)
            out.append(f"{name}={shown}")
    return " ".join(out)


# --- the config ---------------------------------------------------------------------------------


def _split_config(
    config: Mapping[str, Any], source: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Canonical values of the source constants, and of the compile options."""
    constants: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for name, value in config.items():
        if not isinstance(name, str) or not _IDENT.match(name):
            raise ExportError(f"{source}: parameter name {name!r} is not an identifier")
        if name in KNOWN_PARAMS:
            try:
                canon = canonical_value(name, value)
            except ParamError as exc:
                raise ExportError(f"{source}: {exc}") from None
            (options if name in COMPILE_OPTIONS else constants)[name] = canon
        elif isinstance(value, (bool, np.bool_)):
            constants[name] = bool(value)
        elif isinstance(value, (int, np.integer)) or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer()
        ):
            constants[name] = int(value)
        else:
            raise ExportError(
                f"{source}: {name}={value!r}: only integers and booleans can be written for a "
                f"parameter the engine does not know"
            )
    return constants, options


def _candidate_names(
    constants: Mapping[str, Any],
    aliases: Mapping[str, str | Sequence[str]] | None,
    source: str,
) -> dict[str, tuple[str, ...]]:
    aliases = aliases or {}
    unknown = sorted(set(aliases) - set(constants))
    if unknown:
        raise ExportError(f"{source}: aliases given for {unknown}, which the config does not set")
    out: dict[str, tuple[str, ...]] = {}
    for param in constants:
        if param in aliases:
            given = aliases[param]
            names = (given,) if isinstance(given, str) else tuple(given)
            bad = [n for n in names if not isinstance(n, str) or not _IDENT.match(n)]
            if bad or not names:
                raise ExportError(f"{source}: aliases for {param}: expected identifiers, got {bad}")
        else:
            names = default_names(param)
        out[param] = tuple(dict.fromkeys(names))
    return out


def default_names(param: str) -> tuple[str, ...]:
    """The identifiers a parameter is looked up under: as is, the name the shipped kernel
    declares it under (UPPER_CASE for a parameter it lacks) and kCamelCase."""
    camel = "k" + "".join(part[:1].upper() + part[1:] for part in param.split("_") if part)
    return tuple(dict.fromkeys((param, KERNEL_CONSTANTS.get(param, param.upper()), camel)))


# --- finding declarations -----------------------------------------------------------------------


def _find_one(
    text: str, masked: str, param: str, names: tuple[str, ...], source: str
) -> _Declaration:
    found = sorted(_declarations(text, masked, names), key=lambda d: d.line)
    if not found:
        shown = "|".join(names)
        raise ExportError(
            f"{source}: parameter {param!r} is not declared; searched at line starts for "
            f"'[static] [constexpr|const] <int type> {shown} = <literal>;' (or {{<literal>}}) "
            f"and '#define {shown} <literal>'"
        )
    if len(found) > 1:
        where = ", ".join(f"line {d.line} ({d.name})" for d in found)
        raise ExportError(
            f"{source}: parameter {param!r} is declared {len(found)} times ({where}); "
            f"keep one, or name the one to rewrite with aliases"
        )
    return found[0]


def _declarations(text: str, masked: str, names: tuple[str, ...]) -> Iterable[_Declaration]:
    """Every declaration of one of ``names`` outside comments and string literals."""
    alt = "|".join(re.escape(n) for n in names)
    variable = re.compile(
        rf"^[ \t]*{_SPECIFIERS}(?P<type>{_TYPE})(?:[ \t]+const)?"
        rf"(?:[ \t]*\*[ \t]*(?:const[ \t]+)?|[ \t]+)(?P<name>{alt})[ \t]*"
        rf"(?:=[ \t]*\{{(?P<v1>[^;{{}}\n]*)\}}|\{{(?P<v2>[^;{{}}\n]*)\}}|=(?P<v3>[^;{{}}\n]*));",
        re.MULTILINE,
    )
    define = re.compile(
        rf"^[ \t]*#[ \t]*define[ \t]+(?P<name>{alt})(?:[ \t]+(?P<v>[^\n]*?))?[ \t\r]*$",
        re.MULTILINE,
    )
    for m in variable.finditer(masked):
        type_ = re.sub(r"[ \t]+", " ", m.group("type"))
        if type_.split(" ")[0] in _NOT_TYPES:
            continue
        group = next(g for g in ("v1", "v2", "v3") if m.group(g) is not None)
        yield _declaration(text, masked, m, group, "variable", type_)
    for m in define.finditer(masked):
        yield _declaration(text, masked, m, "v", "define", None)


def _declaration(
    text: str, masked: str, m: re.Match[str], group: str, form: str, type_: str | None
) -> _Declaration:
    start, end = m.span(group) if m.group(group) is not None else (m.end(), m.end())
    line = masked.count("\n", 0, m.start("name")) + 1
    literal = _parse_literal(text, masked, start, end)
    return _Declaration(m.group("name"), form, type_, line, literal, text[start:end].strip())


def _parse_literal(text: str, masked: str, start: int, end: int) -> _Literal | None:
    """The plain literal in ``masked[start:end]``, at most once parenthesised, or None."""
    value = masked[start:end]
    lead = len(value) - len(value.lstrip())
    start, end = start + lead, start + len(value.rstrip())
    value = masked[start:end]
    if value.startswith("(") and value.endswith(")"):
        inner = value[1:-1]
        start += 1 + len(inner) - len(inner.lstrip())
        end -= 1 + len(inner) - len(inner.rstrip())
        value = masked[start:end]
    if m := _INT_LITERAL.match(value):
        return _Literal("int", m.group("digits"), start, start + len(m.group("digits")),
                        suffix=m.group("suffix"), hex=m.group("digits")[:2].lower() == "0x")
    if value in ("true", "false"):
        return _Literal("bool", value, start, end)
    if _QUALIFIED.match(value):
        return _Literal("ident", value, start, end)
    if len(value) >= 2 and value[0] == '"' and value[-1] == '"' and '"' not in value[1:-1]:
        contents = text[start + 1 : end - 1]
        if re.fullmatch(r"[\w.\-]*", contents):
            return _Literal("string", contents, start, end)
    return None


def _as_written(lit: _Literal) -> str:
    return f'"{lit.text}"' if lit.kind == "string" else lit.text + lit.suffix


# --- new values ---------------------------------------------------------------------------------


def _new_literal(param: str, value: Any, decl: _Declaration, source: str) -> str:
    """The text that replaces the literal of ``decl`` (the suffix, if any, stays)."""
    lit = decl.literal
    assert lit is not None
    where = f"{source}:{decl.line}: {decl.name} ({param})"
    info = KNOWN_PARAMS.get(param)
    if info is not None and info.names is not None:
        return _name_literal(param, value, lit, where)
    if isinstance(value, bool) or (info is not None and info.kind == "bool"):
        flag = bool(value)
        if lit.kind == "bool" or decl.type == "bool":
            if lit.kind not in ("bool", "int"):
                raise ExportError(f"{where} holds {_as_written(lit)}; expected true/false or 0/1")
            return "true" if flag else "false"
        if lit.kind == "int":
            return "1" if flag else "0"
        raise ExportError(f"{where} holds {_as_written(lit)}; expected true/false or 0/1")
    if lit.kind != "int" or decl.type == "bool":
        raise ExportError(f"{where} holds {_as_written(lit)}; expected an integer literal")
    lo, hi = _TYPE_RANGES.get(decl.type or "", (-(2**63), 2**64 - 1))
    if value < 0 and ("u" in lit.suffix.lower() or lo == 0):
        lo = 0
    if not lo <= value <= hi:
        raise ExportError(f"{where}: {value} does not fit its type {decl.type or 'literal'}")
    if value < 0:
        return f"-{abs(value)}" if not lit.hex else f"-0x{abs(value):X}"
    return f"0x{value:X}" if lit.hex else str(value)


def _name_literal(param: str, value: Any, lit: _Literal, where: str) -> str:
    """A choice of ``pipeline`` or ``layout`` in the form the declaration already uses."""
    names = KNOWN_PARAMS[param].names or ()
    code = to_code(param, value)
    choice = names[code]
    if lit.kind == "int":
        return str(code)
    if lit.kind == "string":
        return f'"{choice}"'
    if lit.kind == "ident":
        head, sep, last = lit.text.rpartition("::")
        for old in sorted(names, key=len, reverse=True):
            for style in (_upper, _lower, _camel):
                spelled = style(old)
                prefix = last[: len(last) - len(spelled)]
                if last.endswith(spelled) and (
                    style is _camel or prefix == "" or prefix.endswith("_")
                ):
                    return f"{head}{sep}{prefix}{style(choice)}"
        raise ExportError(
            f"{where} holds {lit.text}, which names none of {list(names)} "
            f"(expected e.g. {param.upper()}_{_upper(names[0])} or a 0..{len(names) - 1} code)"
        )
    raise ExportError(f"{where} holds {lit.text}; expected a code, a name or an enum constant")


def _upper(name: str) -> str:
    return name.upper()


def _lower(name: str) -> str:
    return name.lower()


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


# --- the header comment -------------------------------------------------------------------------


def export_header(config: str, options: Mapping[str, Any], info: ExportInfo | None,
                  nl: str = "\n") -> str:
    """The generated comment an exported source starts with: where the config came from,
    the config (``config_text``) and the build flags of the compile ``options``."""
    lines = [HEADER_BEGIN]
    if info is not None:
        where = [f"study {_quoted(info.study)}"]
        if info.storage:
            where.append(f"storage {_quoted(redact_url(info.storage))}")
        if info.trial is not None:
            where.append(f"trial {int(info.trial)}")
        lines.append("// " + ", ".join(where))
        unit = _quoted(info.objective)[1:-1]
        if info.value is not None:
            line = f"// best: {float(info.value):.6g} {unit}"
            if info.baseline:
                line += f", baseline {float(info.baseline):.6g} {unit}"
            if info.gain is not None:
                line += f", gain {info.gain:+.1%}"
            lines.append(line)
    lines += _wrapped("// config: ", config.split(" "))
    if options:
        lines.append(f"// compile options (not constants of this source): {config_text(options)}")
        flags = " ".join(build_flags(options)) or "(none)"
        lines.append(f"// build flags: {flags}")
    lines.append(HEADER_END)
    return nl.join(lines) + nl


def _wrapped(lead: str, words: list[str], width: int = 100) -> list[str]:
    lines, line = [], lead
    for word in words:
        if len(line) + len(word) > width and line != lead:
            lines.append(line.rstrip())
            line = "//   "
        line += word + " "
    lines.append(line.rstrip())
    return lines


def _quoted(text: str) -> str:
    """A one-line, escaped rendering of free text for a ``//`` comment."""
    return json.dumps(str(text), ensure_ascii=True)


def _strip_header(text: str) -> tuple[str, int]:
    """``text`` without a header from an earlier export, and how many lines that took."""
    body = text.removeprefix("\ufeff")
    if not body.startswith(HEADER_BEGIN):
        return body, 0
    end = body.find(HEADER_END)
    if end < 0:
        return body, 0
    stop = body.find("\n", end)
    stop = len(body) if stop < 0 else stop + 1
    return body[stop:], body.count("\n", 0, stop)


def _with_bom(original: str, text: str) -> str:
    return "\ufeff" + text if original.startswith("\ufeff") else text


# --- masking comments and strings ---------------------------------------------------------------


def _mask(text: str) -> str:
    """``text`` with comments blanked and string/char contents blanked, offsets unchanged.

    Newlines are kept so line numbers hold; the quotes of string literals stay so a
    declaration whose value is a string is still seen as one.
    """
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = i
            while j < n and text[j] != "\n":
                j += 2 if text.startswith("\\\n", j) else 1
            start, end, i = i, j, j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            start, end = i, (n if j < 0 else j + 2)
            i = end
        elif c == '"' and (raw := _RAW_OPEN.match(text, i)) and _is_raw_prefix(text, i):
            close = text.find(")" + raw.group(1) + '"', raw.end())
            start, end = i + 1, (n if close < 0 else close + len(raw.group(1)) + 1)
            i = end + 1
        elif c == '"' or (c == "'" and not _is_digit_separator(text, i)):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            start, end, i = i + 1, min(j, n), j + 1
        else:
            i += 1
            continue
        for k in range(start, end):
            if out[k] not in "\r\n":
                out[k] = " "
    return "".join(out)


def _is_raw_prefix(text: str, i: int) -> bool:
    """Whether the quote at ``i`` opens a raw string (``R"``, ``u8R"``, ``LR"``...)."""
    return bool(_RAW_PREFIX.search(text[max(0, i - 5) : i]))


def _is_digit_separator(text: str, i: int) -> bool:
    """Whether the ``'`` at ``i`` sits inside a number (C++14 ``1'000``)."""
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "_."):
        j -= 1
    return j < i and text[j].isdigit()
