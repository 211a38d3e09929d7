"""Batching across questions: concurrent generate() calls merged into one call of the backend behind,
and stopped together on an interrupt (concurrent.in_flight on Ctrl-C)."""

from __future__ import annotations

import _thread
import signal
import threading
import time

import pytest

from deliberation.backends.coalesce import CoalescingBackend
from deliberation.errors import Interrupted
from deliberation.backends.concurrent import in_flight, in_order, stopping
from deliberation.types import Completion, GenerationRequest, Message


def ask(text: str, seed: int = 0) -> GenerationRequest:
    return GenerationRequest((Message("user", text),), max_tokens=8, seed=seed)


class Echo:
    """Answers each request with its own text; records the size of every call."""

    name, model, supports_logprobs = "echo", "echo", False

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[int] = []
        self.fail_on = fail_on

    def generate(self, requests):
        self.calls.append(len(requests))
        if any(r.messages[0].content == self.fail_on for r in requests):
            raise RuntimeError("backend down")
        return [Completion(r.messages[0].content, 1, 1) for r in requests]

    def close(self):
        pass


def in_threads(n: int, fn) -> list:
    """Run fn(i) in n threads started together; results in thread order."""
    results: list = [None] * n
    start = threading.Barrier(n)

    def body(i: int) -> None:
        start.wait()
        try:
            results[i] = fn(i)
        except Exception as err:  # returned, so the test can check every caller saw it
            results[i] = err

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return results


def test_concurrent_callers_share_one_call_and_each_gets_its_own_answers():
    inner = Echo()
    shared = CoalescingBackend(inner, callers=3, window_s=5.0)  # a long window: only all-present can send
    results = in_threads(3, lambda i: shared.generate([ask(f"q{i}-a{j}") for j in range(i + 1)]))
    assert inner.calls == [6] and shared.batch_sizes == [6]
    assert [[c.text for c in r] for r in results] == [["q0-a0"], ["q1-a0", "q1-a1"], ["q2-a0", "q2-a1", "q2-a2"]]


def test_a_lone_caller_is_sent_after_the_window():
    inner = Echo()
    shared = CoalescingBackend(inner, callers=3, window_s=0.01)
    assert [c.text for c in shared.generate([ask("alone")])] == ["alone"]
    assert inner.calls == [1]


def test_a_failure_reaches_every_caller_of_the_batch():
    shared = CoalescingBackend(Echo(fail_on="q1"), callers=3, window_s=5.0)
    results = in_threads(3, lambda i: shared.generate([ask(f"q{i}")]))
    assert all(isinstance(r, RuntimeError) and "backend down" in str(r) for r in results)


def test_empty_request_list_makes_no_call():
    inner = Echo()
    assert CoalescingBackend(inner, callers=2).generate([]) == [] and inner.calls == []


@pytest.mark.parametrize("callers", [1, 2])
def test_it_passes_the_backend_identity_through(callers):
    shared = CoalescingBackend(Echo(), callers=callers)
    assert (shared.name, shared.model, shared.supports_logprobs) == ("echo", "echo", False)


class Blocking:
    """Blocks in generate until interrupted, then stops as llamacpp does (raises Interrupted)."""

    name, model, supports_logprobs = "block", "block", False

    def __init__(self) -> None:
        self.entered, self.stop, self.calls = threading.Event(), threading.Event(), 0

    def generate(self, requests):
        self.calls += 1
        self.entered.set()
        self.stop.wait()
        raise Interrupted()

    def interrupt(self):
        self.stop.set()

    def close(self):
        pass


@pytest.mark.timeout(60, method="thread")  # a caller the interrupt does not reach blocks forever
def test_interrupt_stops_the_running_call_the_waiting_callers_and_later_ones():
    inner = Blocking()
    shared = CoalescingBackend(inner, callers=1)
    errors: list = []
    callers = [threading.Thread(target=lambda i=i: errors.append(_error_of(shared, f"q{i}"))) for i in range(2)]
    callers[0].start()
    inner.entered.wait()  # the first call is being sent ...
    callers[1].start()
    while not shared._pending:  # ... and the second waits for it
        time.sleep(0.001)
    shared.interrupt()
    for t in callers:
        t.join()
    assert len(errors) == 2 and all(isinstance(e, Interrupted) for e in errors)
    with pytest.raises(Interrupted):
        shared.generate([ask("late")])
    assert inner.calls == 1


def _error_of(shared: CoalescingBackend, text: str) -> BaseException | None:
    try:
        shared.generate([ask(text)])
    except BaseException as err:
        return err
    return None


@pytest.fixture
def ctrl_c_raises():
    """SIGINT raising KeyboardInterrupt, as in a terminal, for the test's length. A shell starts background
    jobs with SIGINT ignored and Python then leaves it ignored: `make test &` hung on the tests below."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


@pytest.mark.timeout(60, method="thread")  # without the interrupt the runner's pool waits forever for the blocked calls
@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_interrupts_the_questions_in_flight_and_starts_no_other():
    inner = Blocking()
    main = threading.main_thread().ident
    sender = threading.Thread(target=lambda: (inner.entered.wait(), signal.pthread_kill(main, signal.SIGINT)))
    sender.start()
    with pytest.raises(KeyboardInterrupt):
        for _ in in_flight(lambda item, backend: backend.generate([ask(item)]), list("abcd"), inner, 2):
            pass
    sender.join()
    assert inner.stop.is_set() and inner.calls == 1  # a and b shared one call; c and d never reached it


@pytest.mark.timeout(60, method="thread")
@pytest.mark.usefixtures("ctrl_c_raises")
def test_a_ctrl_c_that_does_not_wake_the_waiting_runner_is_still_seen():
    """CPython runs a signal's handler between bytecodes, so a SIGINT that lands just before the runner
    blocks on a lock sets the flag without waking it (the test above lost it about once in 200 runs).
    ``_thread.interrupt_main`` sets that flag and wakes nothing: the same race, every time."""
    inner, nudged = Blocking(), threading.Event()

    def ctrl_c_then_nudge() -> None:
        inner.entered.wait()
        time.sleep(0.2)  # the main thread is waiting for the questions by now
        _thread.interrupt_main()
        if not inner.stop.wait(10):  # the Ctrl-C was lost: end the blocked call so the test can finish
            nudged.set()
            inner.interrupt()

    sender = threading.Thread(target=ctrl_c_then_nudge)
    sender.start()
    with pytest.raises(KeyboardInterrupt):
        for _ in in_flight(lambda item, backend: backend.generate([ask(item)]), list("abcd"), inner, 2):
            pass
    sender.join()
    assert not nudged.is_set() and inner.calls == 1


@pytest.mark.timeout(60, method="thread")  # closing the runner's pool would wait forever for the blocked call
def test_ctrl_c_in_the_consumer_interrupts_the_backend_before_the_questions_are_closed():
    inner = Blocking()

    def quick_or_blocked(item: str, backend) -> object:
        return item if item == "a" else backend.generate([ask(item)])

    with pytest.raises(KeyboardInterrupt):
        with stopping(in_flight(quick_or_blocked, ["a", "b"], inner, 2), inner) as answers:
            for answer in answers:
                inner.entered.wait()  # "b" is in the backend when the consumer is interrupted
                raise KeyboardInterrupt
    assert answer == "a" and inner.stop.is_set() and inner.calls == 1


def test_in_order_lists_the_results_in_the_items_order_whatever_order_they_finish_in():
    last_done = threading.Event()

    def answer(item: str, backend) -> str:
        if item == "a":  # the first item finishes last
            assert last_done.wait(10)
        [reply] = backend.generate([ask(item)])
        if item == "c":
            last_done.set()
        return reply.text

    finished = [text for text in in_flight(answer, list("abc"), Echo(), 3)]
    last_done.clear()
    assert finished[-1] == "a"
    assert in_order(answer, list("abc"), Echo(), 3) == ["a", "b", "c"]
