"""Calls of an untrusted program's function from trusted tests in another process: the verdict of a test
cannot be forged by the program it judges.

Why: HumanEval's ``check(candidate)`` asserts ``candidate(x) == y`` in the program's own process, where the
program can return an object whose ``__eq__`` always says True, replace ``abs`` or ``sorted``, or find and
print the harness's success marker through frame introspection. Here the two sides are split:

- the **server** (``serve``, this file run with ``python -I -c`` inside the sandbox) loads the program and
  answers one call at a time: it reads ``{"args": ..., "kwargs": ...}`` lines on its stdin and writes
  ``{"value": ...}`` or ``{"raised": "ExceptionName"}`` lines on its stdout; the program's own prints go to
  stderr (fd 1 is pointed there before the program is loaded);
- the **judge** (``judge``, run by the sandbox's supervisor, outside the sandbox) runs the trusted test code
  with the entry point bound to a proxy that sends each call to the server and returns the decoded answer.

Values cross as JSON of plain data (``encode``/``decode``): None, bool, int, float, str, list, and tagged
objects for tuple, dict, set, frozenset, bytes, complex and big ints. Subclasses travel as their base
type's value (a numpy float as a float); anything else becomes an ``Opaque`` that equals nothing but
itself. The judge therefore compares built-in values with built-in ``==`` in a process the program never
runs in. Whatever the program writes on the channel is at most a claim about what its function returned,
which is what a function is. Standard library only: the supervisor loads this file by path.
"""

from __future__ import annotations

import json
import operator
import os
import select
import sys
import time
from typing import Any

MAX_DEPTH = 100  # nesting of one value
MAX_REPLY_BYTES = 64 * 1024 * 1024  # one answer of the server, read by the judge
BIG_INT = 1 << 4096  # ints from here on travel as hex (Python limits int <-> decimal text conversions)


class Opaque:
    """A value of a type that does not travel (a function, a numpy array): equal only to itself."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<opaque {self.type_name}>"


class CallFailed(Exception):
    """The program's function raised, or its answer could not be read."""


class Timeout(Exception):
    """The program did not answer before the deadline."""


# --- plain values -------------------------------------------------------------------------------------------


def encode(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-able plain data (see the module docstring)."""
    if depth > MAX_DEPTH:
        raise ValueError("value nested too deeply")
    if value is None or isinstance(value, (bool, float, str)):
        return value if type(value) in (bool, float, str) or value is None else _base(value)
    if isinstance(value, int):
        number = int(value)
        return number if abs(number) < BIG_INT else {"int": hex(number)}
    return _encode_other(value, depth + 1)


def _base(value: Any) -> Any:
    """A bool, float or str subclass as its base type's value."""
    for base in (bool, float, str):
        if isinstance(value, base):
            return base(value)
    raise TypeError(type(value).__name__)


def _encode_other(value: Any, depth: int) -> Any:
    if isinstance(value, list):
        return [encode(x, depth) for x in value]
    if isinstance(value, dict):
        return {"dict": [[encode(k, depth), encode(v, depth)] for k, v in value.items()]}
    for kind in (tuple, frozenset, set):
        if isinstance(value, kind):
            return {kind.__name__: [encode(x, depth) for x in value]}
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": bytes(value).hex()}
    if isinstance(value, complex):
        return {"complex": [value.real, value.imag]}
    if hasattr(type(value), "__index__"):  # integer types that are not int subclasses (numpy.int64)
        return encode(operator.index(value), depth)
    return {"opaque": type(value).__name__}


_TAGS = {"tuple": tuple, "set": set, "frozenset": frozenset}


def decode(data: Any) -> Any:
    """The value ``encode`` wrote: built-in types only. ValueError/TypeError on anything else."""
    if isinstance(data, list):
        return [decode(x) for x in data]
    if not isinstance(data, dict):
        return data
    if len(data) != 1:
        raise ValueError("a tagged value has one key")
    ((tag, body),) = data.items()
    if tag in _TAGS:
        return _TAGS[tag](decode(x) for x in body)
    if tag == "dict":
        return {decode(k): decode(v) for k, v in body}
    return _decode_scalar(tag, body)


def _decode_scalar(tag: str, body: Any) -> Any:
    if tag == "int":
        return int(body, 16)
    if tag == "bytes":
        return bytes.fromhex(body)
    if tag == "complex":
        return complex(float(body[0]), float(body[1]))
    if tag == "opaque":
        return Opaque(str(body))
    raise ValueError(f"unknown tag {tag!r}")


# --- the server: runs in the sandbox ---------------------------------------------------------------------


def serve(path: str, entry: str) -> None:
    """Load the program at ``path`` and answer calls of its ``entry`` until stdin closes."""
    requests, replies = os.fdopen(os.dup(0), "rb"), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)  # the program's prints go to stderr, never onto the reply channel it shares a process with
    namespace = {"__name__": "__sandbox__"}
    try:
        with open(path, encoding="utf-8") as handle:
            exec(compile(handle.read(), path, "exec"), namespace)
    except BaseException as error:  # the program may raise anything, SystemExit included
        _reply(replies, {"load": f"{type(error).__name__}: {error}"[:300]})
        return
    _reply(replies, {"load": "ok"})
    for line in requests:
        _reply(replies, _answer(namespace, entry, line))


def _answer(namespace: dict[str, Any], entry: str, line: bytes) -> dict[str, Any]:
    try:
        request = json.loads(line)
        value = namespace[entry](*decode(request["args"]), **decode(request["kwargs"]))
        return {"value": encode(value)}
    except BaseException as error:  # what the function raised is its answer
        return {"raised": type(error).__name__}


def _reply(fd: int, message: dict[str, Any]) -> None:
    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


# --- the judge: runs in the supervisor, outside the sandbox ------------------------------------------------


class Proxy:
    """The program's function as the tests see it: each call goes to the server, the answer is decoded."""

    def __init__(self, requests: int, replies: int, deadline: float) -> None:
        self.requests, self.replies, self.deadline = requests, replies, deadline
        self.buffer = bytearray()
        os.set_blocking(requests, False)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.send({"args": encode(list(args)), "kwargs": encode(kwargs)})
        answer = self.receive()
        if "raised" in answer:
            raise CallFailed(f"the function raised {answer['raised']}")
        try:
            return decode(answer["value"])
        except (KeyError, ValueError, TypeError, RecursionError) as error:
            raise CallFailed(f"unreadable answer ({type(error).__name__})") from error

    def send(self, message: dict[str, Any]) -> None:
        data = memoryview((json.dumps(message) + "\n").encode())
        while data:
            self._wait(write=True)
            try:
                data = data[os.write(self.requests, data):]
            except BlockingIOError:
                continue
            except BrokenPipeError as error:
                raise CallFailed("the program exited") from error

    def receive(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            self._wait(write=False)
            chunk = os.read(self.replies, 1 << 16)
            if not chunk:
                raise CallFailed("the program exited")
            self.buffer += chunk
            if len(self.buffer) > MAX_REPLY_BYTES:
                raise CallFailed("answer too large")
        line, _, rest = bytes(self.buffer).partition(b"\n")
        self.buffer = bytearray(rest)
        try:
            answer = json.loads(line)
        except (ValueError, RecursionError) as error:
            raise CallFailed("unreadable answer") from error
        if not isinstance(answer, dict):
            raise CallFailed("unreadable answer")
        return answer

    def _wait(self, write: bool) -> None:
        left = self.deadline - time.monotonic()
        fds = ([], [self.requests]) if write else ([self.replies], [])
        if left <= 0 or not any(select.select(*fds, [], left)[:2]):
            raise Timeout()


def judge(tests: dict[str, str], proxy: Proxy) -> tuple[str, str]:
    """Run the trusted ``tests`` (setup, code, entry) against ``proxy``: (status, message), status one of
    passed, failed, timeout. The tests' prints go to stderr: the supervisor's stdout carries its report."""
    stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        loaded = proxy.receive().get("load")
        if loaded != "ok":
            return "failed", f"the program did not load: {loaded}"
        namespace: dict[str, Any] = {"__name__": "__tests__"}
        exec(compile(tests["setup"], "<setup>", "exec"), namespace)
        namespace[tests["entry"]] = proxy
        exec(compile(tests["code"], "<tests>", "exec"), namespace)
        return "passed", ""
    except Timeout:
        return "timeout", "the program did not answer in time"
    except Exception as error:  # a failed assertion, a failed call, or an error of the tests on its answers
        return "failed", f"{type(error).__name__}: {error}"[:500]
    finally:
        sys.stdout = stdout


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])
