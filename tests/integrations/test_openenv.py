"""``agentgym serve`` as a real OpenEnv server, played by OpenEnv's own clients over 127.0.0.1."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import gymnasium as gym
import psutil
import pytest

pytest.importorskip("openenv")
from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from processes import wait_gone  # noqa: E402
from servers import Server, subprocess_env  # noqa: E402
from websockets.exceptions import ConnectionClosed, InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

import agentgym  # noqa: E402,F401
from agentgym.integrations.openenv import AgentGymClient, for_clients, jsonable  # noqa: E402

TOOLQA = {"question_kinds": ["single_hop"], "max_turns": 4, "expert": True}


@pytest.fixture(scope="module")
def toolqa_server():
    """One ToolQA server for the tests below (each closes the sessions it opens)."""
    server = Server("ToolQA-v0", "--env-kwargs", json.dumps(TOOLQA), "--max-sessions", "16")
    yield server
    server.close()


def in_process(env_id, kwargs, seed, choose):
    """Play one episode here; ``choose(step, info)`` picks each action. Returns (actions, steps)."""
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=seed)
    steps, actions, done = [(for_clients(obs), None, False, False, for_clients(jsonable(info)))], [], False
    while not done:
        actions.append(choose(len(actions), info))
        obs, reward, terminated, truncated, info = env.step(actions[-1])
        steps.append((for_clients(obs), reward, terminated, truncated, for_clients(jsonable(info))))
        done = terminated or truncated
    env.close()
    return actions, steps


def over_the_wire(client, seed, actions):
    """The same episode through an OpenEnv client: reset(seed), then the same actions."""
    result = client.reset(seed=seed)
    steps = []
    for action in [None, *actions]:
        if action is not None:
            result = client.step({"text": action})
        o = result.observation
        assert result.done == (o["terminated"] or o["truncated"])
        assert o["reward_components"] == o["info"].get("reward_components", [])
        steps.append((o["text"], result.reward, o["terminated"], o["truncated"], o["info"]))
    return steps


def expert(_, info):
    return info["expert_action"]


def test_toolqa_episodes_over_the_wire_equal_the_same_episodes_in_process(toolqa_server):
    def broken_then_expert(i, info):
        return "\x00 not an action {" if i == 0 else info["expert_action"]

    with GenericEnvClient(base_url=toolqa_server.url) as client:
        for seed, choose in ((0, expert), (1, expert), (2, broken_then_expert)):
            actions, here = in_process("ToolQA-v0", TOOLQA, seed, choose)
            assert over_the_wire(client, seed, actions) == here
            assert here[-1][4]["reward_components"] and here[-1][2]  # the episode ended with its terms
        assert client.state()["task_id"] == here[0][4]["task_id"]
    # the typed client reads the same server
    with AgentGymClient(base_url=toolqa_server.url) as client:
        result = client.reset(seed=0, options={"split": "valid"})
        assert result.observation.info["split"] == "valid" and result.reward is None
        result = client.step(result.observation.info["expert_action"])
        assert result.observation.info["reward_terms"]["format"] == 1.0 and client.state().step_count == 1


def test_bad_input_gets_a_clear_error_and_the_server_keeps_serving(toolqa_server):
    ws_url = toolqa_server.url.replace("http://", "ws://") + "/ws"
    with connect(ws_url, max_size=None) as raw, GenericEnvClient(base_url=toolqa_server.url) as other:
        def ask(message):
            raw.send(message if isinstance(message, str) else json.dumps(message))
            return json.loads(raw.recv(timeout=30))

        assert ask({"type": "step", "data": {"text": "x"}})["data"]["message"].startswith("no episode in this session")
        assert ask("{not json")["data"]["code"] == "INVALID_JSON"
        assert ask({"type": "dance"})["data"]["code"] == "UNKNOWN_TYPE"
        assert ask({"type": "reset", "data": {"seed": -3}})["data"]["message"].startswith("seed must be")
        assert "unknown reset argument" in ask({"type": "reset", "data": {"sead": 3}})["data"]["message"]
        assert ask({"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        for bad in ({"text": 5}, {"txt": "x"}, {}, {"text": "x", "extra": 1}):
            assert ask({"type": "step", "data": bad})["data"]["code"] == "VALIDATION_ERROR"
        # any string is a legal action: answered, not an error, the episode goes on
        for action in ("", "\x00\x01", "<tool_call>{" * 3, "y" * 1_000_000):
            reply = ask({"type": "step", "data": {"text": action}})
            assert reply["type"] == "observation" and reply["data"]["observation"]["info"]["action_valid"] is False
        # meanwhile another session plays a whole episode
        result = other.reset(seed=0)
        while not result.done:
            result = other.step({"text": result.observation["info"]["expert_action"]})
        assert result.observation["info"]["success"] is True
        assert ask({"type": "state"})["data"]["step_count"] == 4
    # plain HTTP: a bad request is a 400 with the reason, not a crash
    request = urllib.request.Request(toolqa_server.url + "/step", data=json.dumps({"action": {"text": "x"}}).encode(),
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=30)
    assert error.value.code == 400 and "WebSocket" in json.loads(error.value.read())["detail"]
    assert toolqa_server.proc.poll() is None


@pytest.mark.network
@pytest.mark.multiproc
def test_sixteen_concurrent_sessions_hold_with_bounded_memory_and_the_seventeenth_is_refused(toolqa_server):
    server = psutil.Process(toolqa_server.pid)

    def round_of_16():
        clients = [GenericEnvClient(base_url=toolqa_server.url).connect() for _ in range(16)]
        results, errors = [None] * 16, []

        def play(i):
            try:
                result = clients[i].reset(seed=i)
                while not result.done:
                    result = clients[i].step({"text": result.observation["info"]["expert_action"]})
                results[i] = result.observation["info"]["success"]
            except Exception as e:  # noqa: BLE001  reported below
                errors.append(e)

        threads = [threading.Thread(target=play, args=(i,)) for i in range(16)]
        [t.start() for t in threads]
        [t.join(120) for t in threads]
        # one more is told why it is refused (OpenEnv sends the error as the session opens)
        with connect(toolqa_server.url.replace("http://", "ws://") + "/ws") as extra:
            refused = json.loads(extra.recv(timeout=30))
        assert refused["data"]["code"] == "CAPACITY_REACHED" and refused["data"]["max_sessions"] == 16
        for c in clients:
            c.close()
        assert not errors and results == [True] * 16
        return server.memory_info().rss

    first = round_of_16()
    rss = [round_of_16() for _ in range(2)]
    # the slots come back when sessions close, and memory does not grow with sessions served
    print(f"server RSS after rounds of 16 sessions: {[first, *rss]}")
    assert max(rss) - first < 40e6, (first, rss)


def http(url, path="/health", body=None, headers=None):
    """(status, parsed JSON body) of one HTTP request, errors included."""
    request = urllib.request.Request(url + path, data=body, headers={"Content-Type": "application/json",
                                                                      **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def raw_post(url, path, headers, chunks, timeout=20.0):
    """POST with hand-written headers, sending ``chunks`` until the server stops reading; returns
    (status, raw response body). Lets a test send a body larger than it claims or never ends."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": f"{host}:{port}", "Connection": "close",
                                                       **headers}.items())
        sock.sendall(f"POST {path} HTTP/1.1\r\n{head}\r\n".encode())
        try:
            for chunk in chunks:
                sock.sendall(chunk)
        except OSError:  # the server answered and closed: what it said is in the socket
            pass
        reply = b""
        try:
            while data := sock.recv(65536):
                reply += data
        except OSError:  # a reset after the reply
            pass
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def test_cross_origin_and_foreign_host_requests_are_refused(toolqa_server):
    url, port = toolqa_server.url, toolqa_server.url.rsplit(":", 1)[1]
    ws_url = url.replace("http://", "ws://") + "/ws"
    # a page on another site (its fetch carries its Origin) cannot drive the server
    status, body = http(url, "/reset", json.dumps({"seed": 0}).encode(), {"Origin": "http://evil.example"})
    assert status == 403 and "--allow-origin" in body["detail"], body
    assert http(url, headers={"Origin": "null"})[0] == 403  # sandboxed frames and file:// pages
    with pytest.raises(InvalidStatus) as refused:
        connect(ws_url, origin="http://evil.example")
    assert refused.value.response.status_code == 403
    # a DNS-rebinding page reaches 127.0.0.1 under its own name: refused by Host
    status, body = http(url, headers={"Host": f"evil.example:{port}"})
    assert status == 403 and "--allow-host evil.example" in body["detail"], body
    # clients without an Origin (not browsers), the server's own page, and this machine's names are served
    assert http(url)[0] == 200
    assert http(url, headers={"Origin": url})[0] == 200
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
        assert http(url, headers={"Host": host})[0] == 200
    with connect(ws_url, origin=url) as same_origin:
        same_origin.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert json.loads(same_origin.recv(timeout=30))["type"] == "observation"


@pytest.fixture(scope="module")
def limits_server():
    """A server with a 100 kB message limit and one allowed origin and host name."""
    server = Server("ToolQA-v0", "--max-message-bytes", "100000", "--allow-origin", "https://app.example.org",
                    "--allow-host", "app.example.org")
    yield server
    server.close()


def test_allowed_origins_and_hosts_are_served_and_others_still_refused(limits_server):
    url = limits_server.url
    assert http(url, headers={"Origin": "https://app.example.org"})[0] == 200
    assert http(url, headers={"Host": "app.example.org"})[0] == 200
    assert http(url, headers={"Origin": "https://other.example.org"})[0] == 403
    assert http(url, headers={"Host": "other.example.org"})[0] == 403


def test_bodies_over_the_limit_are_refused_short_unread_and_unechoed(limits_server):
    url, server = limits_server.url, psutil.Process(limits_server.pid)
    rss = server.memory_info().rss
    # a body that says it is 200 MB is refused before it is read
    started = time.monotonic()
    status, body = raw_post(url, "/reset", {"Content-Type": "application/json", "Content-Length": "200000000"},
                            [b"x" * 65536])
    assert status == 413 and len(body) < 300 and b"--max-message-bytes" in body, body[:300]
    assert time.monotonic() - started < 10
    # a body that never says its size is cut off at the limit: 50 MB sent, none of it kept
    status, body = raw_post(url, "/reset", {"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
                            (b"10000\r\n" + b"y" * 65536 + b"\r\n" for _ in range(800)))
    assert status == 413 and len(body) < 300, body[:300]
    # a 422 says what is wrong, not what was sent
    for path, request in (("/reset", {"seed": "z" * 50_000}), ("/step", {"action": {"text": ["z" * 50_000]}})):
        status, body = http(url, path, json.dumps(request).encode())
        assert status == 422 and len(json.dumps(body)) < 1000 and "zzzz" not in json.dumps(body), (path, body)
    # a WebSocket message over the limit closes the session; the server goes on
    with connect(url.replace("http://", "ws://") + "/ws", max_size=None) as raw:
        raw.send(json.dumps({"type": "step", "data": {"text": "y" * 200_000}}))
        with pytest.raises(ConnectionClosed) as closed:
            raw.recv(timeout=30)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    assert server.memory_info().rss - rss < 30e6, (rss, server.memory_info().rss)
    assert http(url)[0] == 200


@pytest.mark.network
@pytest.mark.multiproc
def test_an_idle_session_gives_back_its_slot_and_a_refused_client_is_told_why():
    server = Server("ToolQA-v0", "--max-sessions", "1", "--session-timeout", "2")
    ws_url = server.url.replace("http://", "ws://") + "/ws"
    try:
        holder = GenericEnvClient(base_url=server.url).connect()
        holder.reset(seed=0)
        # the server is full: a second client is told so, in the error and in the close reason
        with pytest.raises(Exception, match="at capacity") as refused:
            GenericEnvClient(base_url=server.url).connect().reset(seed=0)
        print(f"refused client: {refused.value}")
        with connect(ws_url) as raw:
            assert json.loads(raw.recv(timeout=30))["data"]["code"] == "CAPACITY_REACHED"
            with pytest.raises(ConnectionClosed) as closed:
                raw.recv(timeout=30)
        assert closed.value.rcvd.code == 1013 and "at capacity" in closed.value.rcvd.reason
        # the holder sits idle past the timeout: its session closes and the slot is free again
        time.sleep(3.0)
        with GenericEnvClient(base_url=server.url) as other:
            assert other.reset(seed=0).observation["text"].startswith("Question:")
        with pytest.raises(Exception, match="idle for more than 2 s"):
            holder.step({"text": "<answer>x</answer>"})
        holder.close()
    finally:
        server.close()


@pytest.mark.engine
@pytest.mark.network
@pytest.mark.multiproc
def test_concurrent_http_resets_start_at_most_max_sessions_engines():
    pytest.importorskip("scienceworld")
    server = Server("ScienceWorld-v0", "--env-kwargs", json.dumps({"max_turns": 4}), "--max-sessions", "2")
    seen, peak, stop = set(), [0], threading.Event()

    def watch():
        while not stop.is_set():
            jvms = java_of(server.pid)
            seen.update(jvms)
            peak[0] = max(peak[0], len(jvms))
            time.sleep(0.02)

    start, results = threading.Barrier(6), [None] * 6

    def reset(i):
        start.wait()
        results[i] = http(server.url, "/reset", json.dumps({"seed": i}).encode())

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        threads = [threading.Thread(target=reset, args=(i,)) for i in range(6)]
        [t.start() for t in threads]
        [t.join(180) for t in threads]
        time.sleep(0.5)
    finally:
        stop.set()
        watcher.join()
        server.close()
    print(f"JVMs seen: {len(seen)}, at once at most {peak[0]}; statuses {[r[0] for r in results]}")
    assert 1 <= peak[0] <= 2 and len(seen) <= 2
    assert all(status in (200, 503) for status, _ in results) and any(status == 200 for status, _ in results)
    for status, body in results:
        if status == 503:
            assert "at capacity" in body["detail"] and "--max-sessions" in body["detail"], body
        else:
            assert body["observation"]["text"]


@pytest.mark.multiproc
def test_a_client_that_leaves_without_closing_costs_one_log_line(toolqa_server):
    before = len(toolqa_server.stderr)
    client = subprocess.Popen([sys.executable, "-c", CLIENT, toolqa_server.url], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=subprocess_env())
    assert client.stdout.readline().strip() == "playing"
    os.kill(client.pid, signal.SIGKILL)
    client.wait()
    deadline = time.monotonic() + 20
    while len(toolqa_server.stderr) == before and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # the rest of a traceback, were there one
    logged = "".join(toolqa_server.stderr[before:]).splitlines()
    assert len(logged) == 1 and "left without closing its session" in logged[0], logged
    assert toolqa_server.proc.poll() is None


@pytest.mark.engine
@pytest.mark.network
@pytest.mark.multiproc
def test_alfworld_episode_over_the_wire_equals_in_process():
    pytest.importorskip("alfworld")
    kwargs = {"expert": True, "max_turns": 30}
    server = Server("ALFWorld-v0", "--env-kwargs", json.dumps(kwargs))
    try:
        actions, here = in_process("ALFWorld-v0", kwargs, 3, expert)
        with GenericEnvClient(base_url=server.url) as client:
            assert over_the_wire(client, 3, actions) == here
        assert here[-1][4]["success"] and here[0][4]["admissible_actions"]
    finally:
        server.close()


@pytest.mark.engine
@pytest.mark.network
@pytest.mark.multiproc
def test_server_paths_do_not_reach_clients(tmp_path):
    pytest.importorskip("textworld")
    game = tmp_path / "games" / "one.z8"
    tw_make = os.path.join(os.path.dirname(sys.executable), "tw-make")
    subprocess.run([tw_make, "custom", "--world-size", "3", "--nb-objects", "5", "--quest-length", "3", "--seed", "1",
                    "--output", str(game), "-f", "--silent"], check=True, capture_output=True, timeout=300)
    # an engine error that names the game's path, as in process
    assert str(game) in gym.make("TextWorld-v0", game=str(game)).reset(seed=0)[1]["game_file"]
    server = Server("TextWorld-v0", "--env-kwargs", json.dumps({"game": str(game)}), cwd=str(tmp_path))
    try:
        with GenericEnvClient(base_url=server.url) as client:
            result = client.reset(seed=0)
            sent = [result.observation, client.state(), client.step({"text": "look"}).observation]
        assert result.observation["info"]["task_id"] == "one"
        assert "game_file" not in result.observation["info"]
        assert str(tmp_path) not in json.dumps(sent), "a server path went to the client"
        assert for_clients(f"failed to start {game}: no such game") == "failed to start one.z8: no such game"
        assert for_clients("km/h, 1/2/2020, https://example.org/a/b and /no_such_root/x/y") == (
            "km/h, 1/2/2020, https://example.org/a/b and /no_such_root/x/y")
    finally:
        server.close()


CLIENT = """
import sys
from openenv.core.generic_client import GenericEnvClient
client = GenericEnvClient(base_url=sys.argv[1]).connect()
client.reset(seed=0)
print("playing", flush=True)
sys.stdin.read()
"""


def java_of(pid):
    return {p.pid for p in psutil.Process(pid).children(recursive=True) if p.name() == "java"}


@pytest.mark.engine
@pytest.mark.network
@pytest.mark.multiproc
def test_scienceworld_over_the_wire_equals_in_process_and_a_killed_client_leaks_no_jvm():
    pytest.importorskip("scienceworld")
    kwargs = {"max_turns": 4}
    server = Server("ScienceWorld-v0", "--env-kwargs", json.dumps(kwargs))
    try:
        actions, here = in_process("ScienceWorld-v0", kwargs, 5, lambda i, info: info["admissible_actions"][3 * i])
        with GenericEnvClient(base_url=server.url, message_timeout_s=120) as client:
            assert over_the_wire(client, 5, actions) == here
            assert java_of(server.pid)  # this session's engine runs in the server
        assert here[-1][3] and here[-1][4]["reward_components"]  # truncated at the turn limit, with its terms
        assert wait_gone(java_of(server.pid) or set(), within=30)  # a closed session closes its JVM

        client = subprocess.Popen([sys.executable, "-c", CLIENT, server.url], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=subprocess_env())
        assert client.stdout.readline().strip() == "playing"
        jvms = java_of(server.pid)
        assert len(jvms) == 1
        os.kill(client.pid, signal.SIGKILL)
        client.wait()
        assert wait_gone(jvms, within=30), "the killed client's JVM is still running"
        assert server.proc.poll() is None
        with GenericEnvClient(base_url=server.url, message_timeout_s=120) as again:
            assert again.reset(seed=5).observation["text"] == here[0][0]
            jvms = java_of(server.pid)
        assert wait_gone(jvms, within=30)
    finally:
        server.close()
