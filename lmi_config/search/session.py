"""One search from start to end: prepare the grid and the judge's predictions, then export and
load trial after trial, recording each outcome before the next one starts."""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lmi_config.errors import InputError
from lmi_config.knowledge.planning import search_constants
from lmi_config.search import cache_config, progress
from lmi_config.search.grid import Predictor, Trial, TrialGrid, export_timeout_seconds, seed_grid
from lmi_config.search.order import Order, announce_order, pair_value, value_order
from lmi_config.search.records import (
    TOKEN_VARIABLE,
    Record,
    SearchLock,
    SearchPaths,
    Subject,
    check_work_dir,
    end_orphans,
    make_directory,
    record_child,
    results_path,
)
from lmi_config.search.runner import ChildRunner, StepResult, classify, remove_artifacts
from lmi_config.search.shards import Shard
from lmi_config.search.strategy import GuidedStrategy, Outcomes, SeedStrategy
from lmi_config.search.system import Machine, check_commands, machine

STRATEGIES = ("guided", "seed")


@dataclass(frozen=True)
class SearchOptions:
    """What to search and how (see ``lmi-config search --help``)."""

    model: str
    output: str | None = None
    strategy: str = "guided"
    instance: str | None = None
    cores: int | None = None
    cores_per_device: int | None = None
    task: str | None = None
    backend: str = "nxdi"  # the memory model that predicts: optimum-neuron exports with NxD
    dtype: str | None = None
    exporter: str = "optimum-cli"
    python: str = "python"
    work_dir: str = "data"
    export_timeout: int | None = None
    load_timeout: int | None = None
    keep_artifacts: bool = False
    required_free_bytes: int | None = None
    dry_run: bool = False
    hub: bool = False
    # a shard runs only its TP sizes (see search/shards.py); ``where`` marks each proof it records
    shard: Shard | None = None
    where: dict[str, Any] | None = None
    # the guided strategy tries first the (TP, batch) pairs the planner ranks best for this workload
    objective: str = "throughput"
    input_tokens: int | None = None  # None: plan's default
    output_tokens: int | None = None


@dataclass
class SearchResult:
    """How the search ended and what it found."""

    status: str  # complete | interrupted | dry-run
    strategy: str
    results: Path | None = None
    journal: Path | None = None
    valid: list[Trial] = field(default_factory=list)
    trials_run: int = 0
    failed: int = 0
    skipped: int = 0
    stop_signal: int | None = None
    dry_run_text: str = ""


@dataclass
class _Setup:
    options: SearchOptions
    arch: Any
    machine: Machine
    grid: TrialGrid
    predict: Predictor
    strategy: Any
    subject: Subject
    paths: SearchPaths
    order: Order | None = None  # the planner's order of the pairs (guided), best first

    @property
    def exports(self) -> Path:
        """Where this search's trials are exported (its own directory under --work-dir)."""
        return self.paths.exports_under(Path(self.options.work_dir))


def _prepare(options: SearchOptions) -> _Setup:
    from lmi_config.knowledge.instances import resolve_instance
    from lmi_config.modelarch import ModelResolutionError, resolve_model
    from lmi_config.search.exporter_version import export_registry_version

    if options.strategy not in STRATEGIES:
        raise InputError(f"unknown strategy {options.strategy!r}; choose guided or seed")
    results = results_path(options.output, options.model)
    check_work_dir(Path(options.work_dir))
    try:
        arch = resolve_model(options.model, allow_hub=options.hub)
    except ModelResolutionError as error:
        raise InputError(str(error)) from None
    found = machine(options.instance, options.cores, options.cores_per_device, options.python)
    instance = resolve_instance(found.instance_type)
    grid = seed_grid(
        arch.num_attention_heads, arch.max_position_embeddings, found.available_cores, found.cores_per_device
    )
    whole = grid
    if options.shard is not None:
        grid = replace(grid, tensor_parallel_sizes=options.shard.sizes(grid.tensor_parallel_sizes))
    if not whole.size:
        raise InputError(
            f"no candidate for {options.model} on {found.instance_type}: TP must be a multiple of "
            f"{found.cores_per_device}, at least 2, at most {found.available_cores} and divide "
            f"{arch.num_attention_heads} heads; lengths are powers of two from 1024 below "
            f"{arch.max_position_embeddings} positions"
        )
    exporter = export_registry_version(options.python)  # the optimum-neuron whose registry judges the model
    predict = Predictor(arch, instance, options.backend, options.dtype, exporter)
    predict.refuse_unexported()
    order = None
    strategy: Any = SeedStrategy(grid)
    if options.strategy == "guided":
        order = value_order(options, predict, grid)
        pairs = [value.pair for value in order]
        strategy = GuidedStrategy(grid, predict, search_constants().memory_error_margin, pairs)
    target = cache_config.compile_target(instance.family)
    assert target is not None
    task = options.task or ("text-generation" if arch.is_text_generation else "feature-extraction")
    return _Setup(
        options,
        arch,
        found,
        grid,
        predict,
        strategy,
        Subject(options.model, target, task),
        SearchPaths.beside(results),
        order,
    )


def run_search(
    options: SearchOptions,
    report: Callable[[str], None] | None = None,
    after_record: Callable[[], None] | None = None,
) -> SearchResult:
    """Run (or, with ``dry_run``, list) the search; ``report`` receives each progress line,
    ``after_record`` is called after each outcome is recorded (a shard publishes its files then)."""
    emit = report or (lambda text: None)
    recorded = after_record or (lambda: None)
    setup = _prepare(options)
    if options.dry_run:
        guided = GuidedStrategy(setup.grid, setup.predict, search_constants().memory_error_margin)
        rows = [(trial, setup.predict(trial), guided.skip_reason(trial)) for trial in setup.grid.seed_order()]
        announce_order(setup.order, options, emit, listing=True)
        ranks = {value.pair: value.rank for value in setup.order or []}
        text = progress.format_dry_run(rows, options.strategy, ranks)
        return SearchResult("dry-run", options.strategy, dry_run_text=text)
    check_commands(options.exporter, options.python)
    emit(
        progress.describe_start(
            options.model, setup.machine, setup.grid, options.strategy, str(setup.paths.results)
        )
    )
    announce_order(setup.order, options, emit)
    token = secrets.token_hex(8)
    with SearchLock(setup.paths.lock):
        ended = end_orphans(setup.paths.running)
        if ended:
            emit(f"ended {ended} process(es) a killed search had left running")
        record = Record(setup.paths, setup.subject, options.where)
        outcomes = record.load()  # a damaged file stops the search before it writes anything
        make_directory(setup.exports, "--work-dir")
        record_child(setup.paths.running, token, None)  # before any process carries the token
        runner = ChildRunner(
            dict(os.environ, **{TOKEN_VARIABLE: token}),
            lambda group: record_child(setup.paths.running, token, group),
        )
        previous = _install_handlers(runner)
        try:
            result = _loop(setup, record, outcomes, runner, emit, recorded)
        finally:
            _restore_handlers(previous)
            setup.paths.running.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                setup.exports.rmdir()  # only when empty: kept artifacts stay
    result.valid = sorted(Trial(*key) for key in record.load().successes)
    return result


def _loop(
    setup: _Setup,
    record: Record,
    outcomes: Outcomes,
    runner: ChildRunner,
    emit: Callable[[str], None],
    recorded: Callable[[], None],
) -> SearchResult:
    options, strategy = setup.options, setup.strategy
    result = SearchResult("complete", options.strategy, setup.paths.results, setup.paths.journal)
    started = time.monotonic()
    durations: list[float] = []
    while runner.stop_signal is None:
        skips = strategy.skips(outcomes)
        if skips:
            record.add_journal_entries([(trial, "skipped", {"reason": reason}) for trial, reason in skips])
            outcomes.skipped.update({trial.key: reason for trial, reason in skips})
            result.skipped += len(skips)
            emit(f"skipped {len(skips)} candidate(s) the judge rules out; reasons in {setup.paths.journal}")
            recorded()
        trial = strategy.next_trial(outcomes)
        if trial is None:
            break
        _check_disk(setup)
        prediction = setup.predict(trial)
        timeout = export_timeout_seconds(prediction, options.export_timeout)
        result.trials_run += 1
        upper = result.trials_run + strategy.remaining(outcomes) - 1
        value = pair_value(setup.order, trial)
        emit(
            progress.describe_trial(
                result.trials_run,
                upper,
                trial,
                prediction,
                time.monotonic() - started,
                durations,
                timeout,
                value,
            )
        )
        outcome = _run_trial(setup, runner, trial, timeout)
        if outcome is None:
            result.trials_run -= 1  # ended by a stop request: not a trial, not recorded
            break
        success, seconds, details = outcome
        durations.append(seconds)
        if success:
            record.add_success(trial)
            outcomes.successes.add(trial.key)
        else:
            record.add_journal(trial, "failed", details)
            outcomes.failures[trial.key] = details["class"]
            result.failed += 1
        emit(progress.describe_outcome(success, seconds, details))
        recorded()
    if runner.stop_signal is not None:
        result.status, result.stop_signal = "interrupted", runner.stop_signal
        emit(progress.describe_stop(runner.stop_signal))
    return result


def _run_trial(
    setup: _Setup, runner: ChildRunner, trial: Trial, export_timeout: int
) -> tuple[bool, float, dict[str, Any]] | None:
    """Export, then load; (valid, seconds, failure details) or None when a stop request ended it."""
    options = setup.options
    constants = search_constants()
    name = f"{Path(options.model).name}_tp{trial.tensor_parallel_size}_bs{trial.batch_size}_sl{trial.sequence_length}"
    output = setup.exports / name  # absolute: a path that starts with "-" is no option to the exporter
    logs = (output.with_name(name + ".export.log"), output.with_name(name + ".load.log"))
    remove_artifacts(output, *logs)  # what an interrupted attempt may have left
    values = {
        "model": options.model,
        "batch_size": trial.batch_size,
        "sequence_length": trial.sequence_length,
        "tensor_parallel_size": trial.tensor_parallel_size,
        "task": setup.subject.task,
        "output": str(output),
    }
    export = [
        *shlex.split(options.exporter),
        *(argument.format(**values) for argument in constants.export_arguments),
    ]
    model_class = constants.load_classes.get(setup.subject.task, "NeuronModel")
    load = [
        *shlex.split(options.python),
        "-c",
        constants.load_template.format(model_class=model_class, output=str(output)),
    ]
    seconds = 0.0
    step_result: StepResult | None = None
    step = timeout = None
    try:
        for name_of_step, command, step_timeout, log in (
            ("export", export, export_timeout, logs[0]),
            ("load", load, options.load_timeout or constants.load_seconds, logs[1]),
        ):
            step, timeout = name_of_step, step_timeout
            step_result = runner.run(command, step_timeout, log)
            seconds += step_result.seconds
            if step_result.interrupted:
                return None
            if (step_result.succeeded or step == "load") and not output.is_dir():
                _lost_export(output, trial, step)
            if not step_result.succeeded:
                break
    finally:
        if not options.keep_artifacts:
            remove_artifacts(output, *logs)
    assert step_result is not None
    if step_result.succeeded:
        return True, seconds, {}
    return (
        False,
        seconds,
        {
            "class": classify(step_result),
            "step": step,
            "returncode": step_result.returncode,
            "seconds": round(seconds, 1),
            "timeout_seconds": timeout if step_result.timed_out else None,
            "last_lines": step_result.tail,
        },
    )


def _lost_export(output: Path, trial: Trial, step: str) -> None:
    """Stop without recording the trial: a missing export says nothing about the configuration."""
    if step == "export":
        why = "the exporter ended without error but wrote nothing there (check --exporter and its arguments)"
    else:
        why = "it was removed while the model was loading (by another process?)"
    raise InputError(
        f"{output}: no exported model for {trial.label()}: {why}; the trial was not recorded, "
        "run the same command to try it again"
    )


def _check_disk(setup: _Setup) -> None:
    """Stop before an export that cannot fit on the disk (the results so far are saved)."""
    options = setup.options
    needed = options.required_free_bytes
    if needed is None:
        weights = setup.arch.weight_bytes or setup.arch.total_params * 2
        needed = int(weights * search_constants().disk_free_factor)
    free = shutil.disk_usage(setup.exports).free
    if free < needed:
        raise InputError(
            f"{options.work_dir}: {free / 2**30:.1f} GiB free, an export of {options.model} needs about "
            f"{needed / 2**30:.1f} GiB; free some space (or point --work-dir elsewhere) and run the same command to resume"
        )


def _install_handlers(runner: ChildRunner) -> dict[int, Any]:
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous: dict[int, Any] = {}
    for number in (signal.SIGINT, signal.SIGTERM):
        previous[number] = signal.getsignal(number)
        signal.signal(number, lambda signum, frame: runner.request_stop(signum))
    return previous


def _restore_handlers(previous: dict[int, Any]) -> None:
    for number, handler in previous.items():
        signal.signal(number, handler)
