"""``agentgym mcp ToolQA-v0`` answers the MCP SDK's own client over stdio: tools, calls, errors."""

import sys

import gymnasium as gym
import pytest

pytest.importorskip("mcp")
import anyio  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from servers import subprocess_env  # noqa: E402

import agentgym  # noqa: E402,F401


def session_with(check, *args):
    """Start ``agentgym mcp ToolQA-v0`` as the client's subprocess and run ``check(session)``."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "agentgym.cli", "mcp", "ToolQA-v0", *args],
                                   env=subprocess_env())

    async def main():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await check(session)

    return anyio.run(main)


@pytest.mark.multiproc
def test_the_sdk_client_lists_the_tools_with_their_schemas_and_calls_them():
    env = gym.make("ToolQA-v0")
    schemas = {t["function"]["name"]: t["function"] for t in env.unwrapped.tools}
    expected_passages = env.unwrapped.toolbox.retriever.search("Zuces Works", 3)

    async def check(session):
        listed = (await session.list_tools()).tools
        assert [t.name for t in listed] == ["search", "open", "calculate"]
        for tool in listed:  # the env's own JSON schemas
            assert tool.input_schema == schemas[tool.name]["parameters"]
            assert tool.description == schemas[tool.name]["description"]

        found = await session.call_tool("search", {"query": "Zuces Works"})
        assert not found.is_error and found.content[0].text.startswith("[1] (")
        assert [h.doc.id for h in expected_passages] == [
            line.split("(", 1)[1].split(")", 1)[0] for line in found.content[0].text.split("\n") if line.startswith("[")]
        doc_id = expected_passages[0].doc.id
        opened = await session.call_tool("open", {"doc_id": doc_id})
        assert not opened.is_error and opened.content[0].text.startswith(f"({doc_id})")
        assert (await session.call_tool("calculate", {"expression": "2 ^ 10 - 24"})).content[0].text == "1000"
        # the same call twice gives the same result: calls are independent
        again = await session.call_tool("search", {"query": "Zuces Works"})
        assert again.content[0].text == found.content[0].text

        # the env's own checks come back as tool errors the model can read
        for name, arguments, reason in [
            ("calculate", {"expression": "__import__('os')"}, "Calculation error"),
            ("open", {"doc_id": "no-such-passage"}, "No passage has id"),
            ("search", {"query": 3}, "Invalid output"),
            ("search", {}, "Invalid output"),
            ("search", {"query": "x", "colour": "red"}, "Invalid output"),
        ]:
            result = await session.call_tool(name, arguments)
            assert result.is_error and result.content[0].text.startswith(reason), (name, result.content[0].text)
        # an unknown tool is a protocol error, and the server keeps serving
        with pytest.raises(MCPError, match="unknown tool 'delete'"):
            await session.call_tool("delete", {})
        return (await session.call_tool("calculate", {"expression": "1 + 1"})).content[0].text

    assert session_with(check) == "2"


@pytest.mark.multiproc
def test_env_kwargs_reach_the_env_and_an_env_without_tools_is_refused():
    async def check(session):
        found = await session.call_tool("search", {"query": "Zuces Works"})
        return found.content[0].text.count("\n[")

    assert session_with(check, "--env-kwargs", '{"top_k": 5}') == 4  # five passages: four start a later line

    pytest.importorskip("scienceworld")
    from agentgym.cli import main

    with pytest.raises(SystemExit, match="has no tools to serve over MCP"):
        main(["mcp", "ScienceWorld-v0"])


def test_mcp_without_the_extra_names_the_extra(monkeypatch):
    from agentgym.cli import main

    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(SystemExit, match=r'pip install "agentgym\[mcp\]"'):
        main(["mcp", "ToolQA-v0"])
