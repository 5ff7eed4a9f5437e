"""Control variables of the MPI tool interface (MPI_T_cvar_*) from Python: mpi4py has no bindings for
it, so these are ctypes calls into the libmpi mpi4py loaded (dlsym through mpi4py's extension, as the
native timer does). A variable is looked up by name and described (type, scope, binding, enumeration
or, for MPICH, the value names in its description's order), read, written and read back.

Why: a library's algorithm can be switched inside a running job (tune-sweep's one launch) where the
variable may be written at run time. Whether it may is the library's answer, never assumed:
`MPI_T_cvar_get_info`'s scope says constant or read-only (Open MPI before 5.0.6 and 4.1.7:
`coll_tuned_use_dynamic_rules` is read-only), and a write the library refuses returns
MPI_T_ERR_CVAR_SET_NEVER or _NOT_NOW, reported as `NotWritable` with the reason.

ABI facts (the constants are enumerations whose values differ): Open MPI numbers scopes from 0 and
binds "no object" as 0; the MPICH ABI (MPICH, Intel MPI, MVAPICH: int handles) numbers scopes from
60438 and "no object" is 9700. MPICH attaches no MPI_T enumeration to its algorithm variables: their
integer values follow the order of the names in the description (checked here on 5.0.2 and 4.0.2 by
reading MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=recursive_doubling back as 3, after auto, nb and smp).
MPI_T may be initialised before MPI_Init; everything here works in a process that never calls it.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from typing import Any

from fabricprobe.mpienv.mpich_names import description_values

SCOPES = ("constant", "readonly", "local", "group", "group_eq", "all", "all_eq")
_C_INT = ctypes.c_int
_PTR = ctypes.c_void_p


class MpitError(RuntimeError):
    """The tool interface is missing or a call failed (the message names the call and the code)."""


class NotWritable(MpitError):
    """The library says this variable cannot be written now (read-only, constant, or refused)."""


@dataclass(frozen=True)
class _Abi:
    scope_base: int
    bind_none: int
    set_not_now: int
    set_never: int


_OPEN_MPI = _Abi(scope_base=0, bind_none=0, set_not_now=63, set_never=64)
_MPICH = _Abi(scope_base=60438, bind_none=9700, set_not_now=68, set_never=69)


@dataclass(frozen=True)
class ControlVariable:
    index: int
    name: str
    datatype: str  # int, unsigned, unsigned_long, unsigned_long_long, count, double, bool, char (a string)
    count: int  # elements (a string's buffer size)
    scope: str  # one of SCOPES, or "unknown N"
    bound: bool  # bound to an MPI object (a communicator, ...): not handled here
    description: str
    values: tuple[tuple[int, str], ...]  # (value, name): the enumeration, or MPICH's description order

    @property
    def writable(self) -> bool:
        """What MPI_T_cvar_get_info allows: not constant or read-only, and not bound to an object."""
        return self.scope not in ("constant", "readonly") and not self.scope.startswith("unknown") and not self.bound

    @property
    def why_not_writable(self) -> str:
        if self.bound:
            return f"{self.name} is bound to an MPI object"
        return f"{self.name} has scope {self.scope}: the library does not let it change at run time"

    def value_of(self, text: str | int) -> int | str:
        """The value to write for `text`: a name of its enumeration (or MPICH description order),
        an integer, true/false for a boolean, or the text itself for a string variable."""
        if self.datatype == "char":
            return str(text)
        if isinstance(text, int):
            return text
        named = value_named(self.values, text)
        if named is not None:
            return named
        if self.datatype == "bool" and text.lower() in ("true", "false", "yes", "no"):
            return int(text.lower() in ("true", "yes"))
        if re.fullmatch(r"-?\d+", text.strip()):
            return int(text)
        known = ", ".join(name for _, name in self.values) or "integers"
        raise MpitError(f"{self.name} takes {known}, not {text!r}")

    def name_of(self, value: int | str) -> str:
        """The name of a value (its enumeration's, or MPICH's description order), else the value."""
        return next((name for v, name in self.values if v == value), str(value))


def value_named(values, name: str) -> int | None:
    """The value of `name` among (value, name) pairs, None when none is called so. MPICH 4.0 glues each
    name to the description before it ("...intra-node allreducempir"), and a description that does not
    end as inline_values expects leaves the two joined: then the one name that ends with `name` after a
    letter or a space (never "_": "sched_auto" is not "auto")."""
    by_name = {n: v for v, n in values}
    if name in by_name:
        return by_name[name]
    glued = [v for v, n in values if n.endswith(name) and not n[: -len(name)].endswith("_")]
    return glued[0] if len(glued) == 1 and re.fullmatch(r"\w+", name) else None


class ToolInterface:
    """MPI_T of the library mpi4py loaded (MPI need not be initialised). Use as a context manager
    or call close(); every handle is freed after each read or write."""

    def __init__(self, MPI: Any) -> None:
        self.MPI = MPI
        try:
            self._lib = ctypes.CDLL(MPI.__file__)  # dlsym on the extension also searches libmpi
            self._lib.MPI_T_init_thread  # noqa: B018 - present, or AttributeError
        except (OSError, AttributeError) as exc:
            raise MpitError(f"this MPI library has no tool interface: {exc}") from None
        self._abi = _MPICH if MPI._sizeof(MPI.Datatype) == ctypes.sizeof(_C_INT) else _OPEN_MPI
        self._dtype_size = MPI._sizeof(MPI.Datatype)
        self._types = {}
        for kind, attr in (
            ("int", "INT"),
            ("unsigned", "UNSIGNED"),
            ("unsigned_long", "UNSIGNED_LONG"),
            ("unsigned_long_long", "UNSIGNED_LONG_LONG"),
            ("count", "COUNT"),
            ("double", "DOUBLE"),
            ("bool", "C_BOOL"),
            ("char", "CHAR"),
        ):
            if getattr(MPI, attr, None) is not None:
                self._types[int(MPI._handleof(getattr(MPI, attr)))] = kind
        provided = _C_INT()
        self._call("MPI_T_init_thread", _C_INT(0), ctypes.byref(provided))  # MPI_THREAD_SINGLE is 0 in both ABIs
        self._open = True
        self._cache: dict[str, ControlVariable | None] = {}

    def __enter__(self) -> "ToolInterface":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self._open:
            self._open = False
            self._lib.MPI_T_finalize()

    def _call(self, name: str, *args: Any) -> int:
        rc = getattr(self._lib, name)(*args)
        if rc != 0:
            raise MpitError(f"{name} failed with MPI error {rc}")
        return rc

    def find(self, name: str) -> ControlVariable | None:
        """The variable called `name`, or None when this library has none of that name."""
        if name not in self._cache:
            index = _C_INT()
            rc = self._lib.MPI_T_cvar_get_index(name.encode(), ctypes.byref(index))
            self._cache[name] = self._describe(index.value) if rc == 0 else None
        return self._cache[name]

    def _describe(self, index: int) -> ControlVariable:
        name, name_len = ctypes.create_string_buffer(1024), _C_INT(1024)
        desc, desc_len = ctypes.create_string_buffer(16384), _C_INT(16384)
        verbosity, bind, scope = _C_INT(), _C_INT(), _C_INT()
        dtype = ctypes.create_string_buffer(8)
        enum = _PTR()
        self._call(
            "MPI_T_cvar_get_info",
            _C_INT(index),
            name,
            ctypes.byref(name_len),
            ctypes.byref(verbosity),
            dtype,
            ctypes.byref(enum),
            desc,
            ctypes.byref(desc_len),
            ctypes.byref(bind),
            ctypes.byref(scope),
        )
        handle = int.from_bytes(dtype.raw[: self._dtype_size], "little")
        datatype = self._types.get(handle, f"unknown {handle:#x}")
        description = desc.value.decode(errors="replace")
        offset = scope.value - self._abi.scope_base
        scope_name = SCOPES[offset] if 0 <= offset < len(SCOPES) else f"unknown {scope.value}"
        values = self._enum_items(enum) if enum.value else tuple(enumerate(description_values(description)))
        with self._handle(index) as (_, count):
            pass
        return ControlVariable(
            index=index,
            name=name.value.decode(),
            datatype=datatype,
            count=count,
            scope=scope_name,
            bound=bind.value != self._abi.bind_none,
            description=description,
            values=tuple(values),
        )

    def _enum_items(self, enum: _PTR) -> tuple[tuple[int, str], ...]:
        count, name, name_len = _C_INT(), ctypes.create_string_buffer(256), _C_INT(256)
        self._call("MPI_T_enum_get_info", enum, ctypes.byref(count), name, ctypes.byref(name_len))
        items = []
        for i in range(count.value):
            value, item, item_len = _C_INT(), ctypes.create_string_buffer(256), _C_INT(256)
            self._call("MPI_T_enum_get_item", enum, _C_INT(i), ctypes.byref(value), item, ctypes.byref(item_len))
            items.append((value.value, item.value.decode(errors="replace")))
        return tuple(items)

    class _Handle:
        def __init__(self, owner: "ToolInterface", index: int) -> None:
            self.owner, self.index, self.handle = owner, index, _PTR()

        def __enter__(self) -> tuple[_PTR, int]:
            count = _C_INT()
            self.owner._call(
                "MPI_T_cvar_handle_alloc", _C_INT(self.index), None, ctypes.byref(self.handle), ctypes.byref(count)
            )
            return self.handle, count.value

        def __exit__(self, *exc: Any) -> None:
            if self.handle.value:
                self.owner._lib.MPI_T_cvar_handle_free(ctypes.byref(self.handle))

    def _handle(self, index: int) -> "ToolInterface._Handle":
        return ToolInterface._Handle(self, index)

    def _buffer(self, var: ControlVariable) -> ctypes.Array:
        width = {"bool": 1, "int": 4, "unsigned": 4, "double": 8}.get(var.datatype, 8)
        return ctypes.create_string_buffer(max(var.count, 1) * width if var.datatype == "char" else width * 2)

    def read(self, var: ControlVariable | str) -> int | float | str:
        """The variable's current value (an integer, a float, or a string)."""
        var = self._var(var)
        buf = self._buffer(var)
        with self._handle(var.index) as (handle, _):
            self._call("MPI_T_cvar_read", handle, buf)
        return _decode(var, buf)

    def write(self, var: ControlVariable | str, value: int | str) -> int | float | str:
        """Write `value` (a name, an integer, a string: ControlVariable.value_of) and return the value read
        back. NotWritable when the scope forbids it or the library refuses the write."""
        var = self._var(var)
        if not var.writable:
            raise NotWritable(var.why_not_writable)
        raw = var.value_of(value)
        buf = _encode(var, raw, self._buffer(var))
        with self._handle(var.index) as (handle, _):
            rc = self._lib.MPI_T_cvar_write(handle, buf)
        if rc in (self._abi.set_never, self._abi.set_not_now):
            when = "now" if rc == self._abi.set_not_now else "at run time"
            raise NotWritable(f"{var.name}: the library refuses a write {when} (MPI_T error {rc})")
        if rc != 0:
            raise MpitError(f"MPI_T_cvar_write of {var.name} = {value!r} failed with MPI error {rc}")
        back = self.read(var)
        if back != raw:
            raise NotWritable(f"{var.name}: wrote {raw!r}, read back {back!r}")
        return back

    def _var(self, var: ControlVariable | str) -> ControlVariable:
        if isinstance(var, ControlVariable):
            return var
        found = self.find(var)
        if found is None:
            raise MpitError(f"this library has no control variable {var}")
        return found


def _decode(var: ControlVariable, buf: ctypes.Array) -> int | float | str:
    raw = buf.raw
    if var.datatype == "char":
        return raw.split(b"\0", 1)[0].decode(errors="replace")
    if var.datatype == "double":
        return ctypes.c_double.from_buffer_copy(raw[:8]).value
    if var.datatype == "bool":
        return int(raw[0] != 0)
    signed = var.datatype == "int"
    width = 4 if var.datatype in ("int", "unsigned") else 8
    return int.from_bytes(raw[:width], "little", signed=signed)


def _encode(var: ControlVariable, value: int | str, buf: ctypes.Array) -> ctypes.Array:
    if var.datatype == "char":
        data = str(value).encode()
        if len(data) >= len(buf):
            raise MpitError(f"{var.name} holds at most {len(buf) - 1} bytes")
        ctypes.memmove(buf, data, len(data))
        return buf
    if var.datatype == "double":
        ctypes.memmove(buf, ctypes.byref(ctypes.c_double(float(value))), 8)
        return buf
    if var.datatype.startswith("unknown"):
        raise MpitError(f"{var.name} has a datatype this module does not write ({var.datatype})")
    width = {"bool": 1, "int": 4, "unsigned": 4}.get(var.datatype, 8)
    ctypes.memmove(buf, int(value).to_bytes(width, "little", signed=var.datatype == "int"), width)
    return buf


def describe(names: list[str]) -> dict[str, dict | None]:
    """name -> {datatype, scope, writable, values, value} of each variable, read in this process without
    initialising MPI (tune-sweep's driver asks before it launches: what can be switched at run time)."""
    import mpi4py

    mpi4py.rc.initialize = False
    mpi4py.rc.finalize = False
    from mpi4py import MPI

    out: dict[str, dict | None] = {}
    with ToolInterface(MPI) as tool:
        for name in names:
            var = tool.find(name)
            out[name] = (
                None
                if var is None
                else {
                    "datatype": var.datatype,
                    "scope": var.scope,
                    "writable": var.writable,
                    "values": [list(v) for v in var.values],
                    "value": tool.read(var),
                }
            )
    return out


if __name__ == "__main__":  # python -m fabricprobe.mpienv.mpit NAME...: describe() as JSON, in a child process
    import json
    import sys

    try:
        print(json.dumps(describe(sys.argv[1:])))
    except MpitError as exc:
        print(json.dumps({"error": str(exc)}))
