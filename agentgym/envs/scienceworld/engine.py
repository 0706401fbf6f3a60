"""One ScienceWorld JVM, launched with our own JVM options and spoken to over py4j.

``scienceworld.ScienceWorldEnv`` starts its JVM with py4j's default options (no heap cap, G1 GC:
600+ MB resident per env), starts a Python callback server nobody uses, and on every ``step``
makes eight round trips (look, inventory, task description, valid actions...) whatever the caller
needs. :class:`ScienceWorldEngine` launches the same shipped jar's py4j
``GatewayServer`` with ``java_options`` (default ``-Xmx512m -XX:+UseSerialGC`` and a few more
that trim resident memory), and exposes only the calls the env makes, each one round trip.

Lifetime: the JVM is started with ``--die-on-broken-pipe``, so it exits when its stdin closes,
which the OS does when this Python process dies however it dies. ``close()`` (also run by a
``weakref.finalize`` when the engine is collected or the interpreter exits) closes the gateway,
closes stdin and waits for the process, killing it if it does not exit in time.

Faults: any py4j failure (the JVM was killed, a call timed out, the engine threw) is raised as
:class:`EngineFailure`; ``alive`` tells whether the process is still there, and ``restart()``
starts a fresh one.

Resets: with identity hashes fixed (``-XX:hashCode=2``, the env's ``deterministic=True``) a
variation's gold path is the same every time, so the engine keeps it
(:class:`~agentgym.envs.scienceworld.reset_cache.ResetCache`, in memory and on disk) and a later
load of the variation skips the gold-path generation (a load with it builds the world twice and
plays the whole path).
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import threading
import weakref
from collections.abc import Sequence

from agentgym.envs.scienceworld.reset_cache import ResetCache

# Heap cap and the serial collector are the big wins (SPEC §6); the rest trim thread stacks, code
# cache and compiler threads, which matter when a machine runs one JVM per env.
DEFAULT_JAVA_OPTIONS: tuple[str, ...] = (
    "-Xmx512m",
    "-Xms32m",
    "-XX:+UseSerialGC",
    "-Xss512k",
    "-XX:ReservedCodeCacheSize=64m",
    "-XX:CICompilerCount=2",
)

DETERMINISTIC_OPTION = "-XX:hashCode=2"
"""With it every identity hash is the same, so the engine's hash sets iterate in insertion order."""

INSTALL_HINT = "ScienceWorld needs the `scienceworld` package and Java 11+: pip install 'agentgym[scienceworld]'"


class EngineFailure(RuntimeError):
    """A call into the ScienceWorld JVM failed."""


def _import_scienceworld():
    from gymnasium.error import DependencyNotInstalled

    try:
        import scienceworld.constants as constants  # noqa: F401  (ships the jar)
        from py4j.java_gateway import GatewayParameters, JavaGateway
        from py4j.protocol import Py4JError, Py4JJavaError
    except ImportError as e:
        raise DependencyNotInstalled(f"{INSTALL_HINT} ({e})") from e
    return constants, GatewayParameters, JavaGateway, (Py4JError, Py4JJavaError)


def find_java(java_path: str | None = None) -> str:
    """The java executable to run: ``java_path``, else ``$JAVA_HOME/bin/java``, else ``java`` on PATH."""
    from gymnasium.error import DependencyNotInstalled

    if java_path is None:
        home = os.environ.get("JAVA_HOME")
        java_path = os.path.join(home, "bin", "java") if home else "java"
    found = shutil.which(java_path)
    if found is None:
        raise DependencyNotInstalled(f"no Java runtime found at {java_path!r}. {INSTALL_HINT}")
    return found


def _drain(stream, keep: collections.deque | None) -> None:
    try:
        for line in iter(stream.readline, b""):
            if keep is not None:
                keep.append(line.decode("utf-8", "replace"))
    except (OSError, ValueError):
        pass


def _shutdown(gateway, proc: subprocess.Popen, timeout: float = 5.0) -> None:
    """Close the gateway and make sure the JVM process is gone. Never raises."""
    try:
        gateway.close(keep_callback_server=False, close_callback_server_connections=False)
    except Exception:
        pass
    try:
        if proc.stdin is not None:
            proc.stdin.close()  # --die-on-broken-pipe: the JVM exits on EOF
    except Exception:
        pass
    try:
        proc.wait(timeout=timeout)
    except Exception:
        try:
            proc.kill()
            proc.wait(timeout=timeout)
        except Exception:
            pass
    if proc.poll() is None:
        return  # never close a pipe a drain thread may still be blocked reading
    for stream in (proc.stdout, proc.stderr):  # the process is gone: the drain threads are at EOF
        try:
            stream.close()
        except Exception:
            pass


class ScienceWorldEngine:
    """A ScienceWorld JVM and the ``PythonInterface`` object inside it."""

    def __init__(self, java_options: Sequence[str] | None = None, java_path: str | None = None,
                 timeout: float | None = 120.0, reset_cache: ResetCache | bool | None = True):
        """``reset_cache``: True keeps gold paths in the default :class:`ResetCache` when the JVM
        options make the engine deterministic (else nothing is kept); a ``ResetCache`` uses that
        one; False or None keeps nothing."""
        (self._constants, self._GatewayParameters, self._JavaGateway,
         (self._Py4JError, self._Py4JJavaError)) = _import_scienceworld()
        self.java = find_java(java_path)
        self.java_options = list(DEFAULT_JAVA_OPTIONS if java_options is None else java_options)
        self.timeout = timeout
        self._gateway = None
        self._proc: subprocess.Popen | None = None
        self._server = None
        self._finalizer = None
        self._stderr: collections.deque = collections.deque(maxlen=20)
        if reset_cache is True:
            reset_cache = ResetCache() if DETERMINISTIC_OPTION in self.java_options else None
        self.reset_cache: ResetCache | None = reset_cache or None
        self._loaded: tuple[str, int, str] | None = None  # the variation loaded
        self._gold: list[str] | None = None
        self._gold_generated = False
        self.start()

    # ----- process lifetime ----------------------------------------------------------------
    def start(self) -> None:
        """Launch the JVM and connect to it."""
        self._loaded = None
        proc, port, token = self._launch_jvm()
        gateway = self._JavaGateway(
            gateway_parameters=self._GatewayParameters(
                port=port, auth_token=token, auto_field=True, read_timeout=self.timeout,
                # No py4j finalizers: they would message the JVM from inside Python's garbage
                # collector (and log tracebacks there once it is gone). The few Java objects we
                # receive are released by hand in _call_list; the JVM's own lifetime bounds the rest.
                enable_memory_management=False),
            java_process=proc)
        self._gateway, self._proc = gateway, proc
        # The finalizer holds the gateway and process, never self, so it cannot keep self alive.
        self._finalizer = weakref.finalize(self, _shutdown, gateway, proc)
        try:
            self._server = gateway.jvm.scienceworld.runtime.pythonapi.PythonInterface()
        except Exception as e:
            self.close()
            raise EngineFailure(f"the ScienceWorld JVM started but did not answer: {e}{self._stderr_tail()}") from e

    def _launch_jvm(self) -> tuple[subprocess.Popen, int, str]:
        """Start ``py4j.GatewayServer`` from the shipped jar; read back its port and auth token.

        Done here rather than by py4j's ``launch_gateway`` so that a JVM that fails to start
        (a bad option, a warning printed where the port should be) is killed, not leaked, and
        its output is kept for the error message.
        """
        classpath = [self._constants.JAR_PATH]
        py4j_jar = self._find_py4j_jar()
        if py4j_jar:  # the py4j that talks to it first, as launch_gateway does
            classpath.insert(0, py4j_jar)
        command = [self.java, "-classpath", os.pathsep.join(classpath), *self.java_options,
                   "py4j.GatewayServer", "--die-on-broken-pipe", "--enable-auth", "0"]
        self._stderr.clear()
        try:
            proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, cwd=self._constants.BASEPATH)
        except OSError as e:
            raise EngineFailure(f"could not start the ScienceWorld JVM ({self.java}): {e}") from e
        try:
            port_line = proc.stdout.readline().decode("utf-8", "replace").strip()
            token = proc.stdout.readline().decode("utf-8", "replace").strip()
            port = int(port_line)
        except (ValueError, OSError) as e:
            proc.kill()
            _, err = proc.communicate(timeout=10)
            detail = " | ".join(err.decode("utf-8", "replace").strip().splitlines()[-5:])
            raise EngineFailure(f"the ScienceWorld JVM did not start ({' '.join(command[3:-4])}): "
                                f"got {port_line!r} instead of a port; {detail}") from e
        # Drain both pipes so the JVM never blocks on a full one; keep stderr's tail for errors.
        threading.Thread(target=_drain, args=(proc.stdout, None), daemon=True).start()
        threading.Thread(target=_drain, args=(proc.stderr, self._stderr), daemon=True).start()
        return proc, port, token

    @staticmethod
    def _find_py4j_jar() -> str | None:
        try:
            from py4j.java_gateway import find_jar_path

            path = find_jar_path()
        except Exception:
            return None
        return path if path and os.path.exists(path) else None

    def close(self) -> None:
        """Shut the JVM down (idempotent)."""
        if self._finalizer is not None:
            self._finalizer()  # runs _shutdown once, then detaches
        self._server = None

    def restart(self) -> None:
        self.close()
        self.start()

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None and self._server is not None

    def status(self) -> str:
        """Why the engine is not usable, in words (for error messages)."""
        if self._proc is not None and self._proc.poll() is not None:
            return f"the ScienceWorld JVM exited (code {self._proc.returncode}){self._stderr_tail()}"
        return "the ScienceWorld JVM is not running" if self._server is None else "the ScienceWorld JVM is running"

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def _stderr_tail(self) -> str:
        lines = [str(x).strip() for x in list(self._stderr)[-5:] if str(x).strip()]
        return ("; JVM stderr: " + " | ".join(lines)) if lines else ""

    def _call(self, method: str, *args):
        if self._server is None:
            raise EngineFailure("the ScienceWorld JVM is not running")
        try:
            return getattr(self._server, method)(*args)
        except self._Py4JError as e:
            if not isinstance(e, self._Py4JJavaError) and self._proc is not None:
                try:  # a broken connection usually means the JVM is dying: give it a moment to say so
                    self._proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    pass
            if self._proc is not None and self._proc.poll() is not None:
                why = f"the ScienceWorld JVM exited (code {self._proc.returncode})"
            else:
                why = f"ScienceWorld call {method} failed"
            # A timed-out or broken connection leaves the engine in an unknown state: stop it so
            # the next reset starts a clean one.
            if not isinstance(e, self._Py4JJavaError):
                self.close()
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise EngineFailure(f"{why}: {msg}{self._stderr_tail()}") from e

    def _call_list(self, method: str, *args) -> list:
        """A call returning a java.util.List, as a Python list; the Java list is released."""
        java_list = self._call(method, *args)
        items = list(java_list)
        try:
            self._gateway.detach(java_list)
        except Exception:
            pass
        return items

    # ----- the calls the env makes -----------------------------------------------------------
    def load(self, task: str, variation: int, simplifications: str, gold_path: bool) -> None:
        self._loaded = None
        gold = None
        if gold_path and self.reset_cache is not None:
            gold = self.reset_cache.get(task, variation, simplifications, "gold")
        # A kept gold path makes the load a plain one: the world it builds is the same either way.
        msg = self._call("load", task, int(variation), simplifications, bool(gold_path and gold is None))
        if msg and str(msg).startswith("ERROR"):
            raise EngineFailure(str(msg))
        self._loaded = (task, int(variation), simplifications)
        self._gold, self._gold_generated = gold, bool(gold_path and gold is None)

    def step(self, command: str) -> str:
        return str(self._call("step", command))

    def score(self) -> float:
        return float(self._call("getScore"))

    def completed(self) -> bool:
        return bool(self._call("getCompleted"))

    def valid_actions(self) -> list[str]:
        """The valid actions now, sorted. The JSON variant is one string over the socket, where
        the list variant leaves a Java list object to release: faster, and nothing to clean up."""
        return sorted({str(a["action"]) for a in self.valid_action_entries()})

    def valid_action_entries(self) -> list[dict]:
        """The valid actions now as the engine lists them: ``{"action", "template_id", "obj_ids",
        "type_ids"}`` each, one per action and tuple of objects (two objects of one name give two
        entries with the same ``action``)."""
        return list(json.loads(self._call("getValidActionObjectCombinationsJSON")).get("validActions", []))

    def object_referents(self) -> dict[int, list[str]]:
        """Every object's id -> the names the parser takes for it (``flower pot``, ``flower pot 6``,
        ``flower pot 6 containing apple tree and soil``...)."""
        data = json.loads(self._call("getAllObjectIdsTypesReferentsLUTJSON"))
        return {int(k): [str(r) for r in v.get("referents", [])] for k, v in data.items()}

    def gold_actions(self) -> list[str]:
        """The gold path of the variation loaded with ``gold_path=True``."""
        if self._gold is not None:
            return list(self._gold)
        actions = [str(a) for a in self._call_list("getGoldActionSequence")]
        if self._gold_generated and self._loaded is not None and actions and self.reset_cache is not None:
            self.reset_cache.put(*self._loaded, "gold", actions)
            self._gold = list(actions)
        return actions

    def task_description(self) -> str:
        return str(self._call("getTaskDescription"))

    def look(self) -> str:
        return str(self._call("freeActionLook"))

    def inventory(self) -> str:
        return str(self._call("freeActionInventory"))

    def max_variations(self, task: str) -> int:
        return int(self._call("getTaskMaxVariations", task))

    def task_names(self) -> list[str]:
        return [str(t) for t in self._call_list("getTaskNames")]

    def variations(self, split: str) -> list[int]:
        """The engine's variation list of ``split`` (train/dev/test) for the loaded task."""
        method = {"train": "getVariationsTrain", "dev": "getVariationsDev", "test": "getVariationsTest"}[split]
        return [int(v) for v in self._call_list(method)]
