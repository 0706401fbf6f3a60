"""``agentgym mcp ENV_ID``: an env's tools as an MCP server over stdio (``pip install "agentgym[mcp]"``).

    agentgym mcp ToolQA-v0          # search, open and calculate over ToolQA's knowledge base

Any MCP client (Claude Desktop, an agent framework, OpenEnv's tool actions) lists the tools with
their JSON schemas (the env's own OpenAI function schemas) and calls them. Each call runs as one
step of the env: the env checks the arguments against the schema and runs the tool, exactly as in
an episode. A call the env rejects (bad arguments, an unknown passage id, an expression the
calculator cannot read) comes back as a tool result with ``isError`` and the env's reason; an
unknown tool name is a protocol error. Calls are independent: no episode, turn limit or
repeated-call rule carries over from one call to the next.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from agentgym.extras import require_for_script
from agentgym.integrations.serve import check_env, env_kwargs_from_json


class ToolRunner:
    """Runs one tool call of ``env_id`` as a one-step episode of the env."""

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None):
        import agentgym  # noqa: F401  registers the envs

        self.env_id = env_id
        self.env = gym.make(env_id, **dict(env_kwargs or {}))
        unwrapped = self.env.unwrapped
        self.tools = [t.get("function", t) for t in (getattr(unwrapped, "tools", None) or [])]
        if not self.tools:
            raise ValueError(f"{env_id} has no tools to serve over MCP (its actions are free text)")
        if getattr(unwrapped, "action_format", "json") != "json":
            raise ValueError(f"{env_id} with action_format={unwrapped.action_format!r}: serve it with action_format='json'")
        self.names = [t["name"] for t in self.tools]

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> tuple[str, bool]:
        """``(text, ok)``: the tool's result, or the env's reason it could not run."""
        if name not in self.names:
            raise KeyError(f"unknown tool {name!r}; this server has {', '.join(self.names)}")
        self.env.reset()
        action = json.dumps({"name": name, "arguments": dict(arguments or {})})
        obs, _, _, _, info = self.env.step(f"<tool_call>{action}</tool_call>")
        text = obs.strip()
        if text.startswith("<tool_response>") and text.endswith("</tool_response>"):
            text = text[len("<tool_response>"):-len("</tool_response>")].strip("\n")
        return text, bool(info.get("action_valid"))

    def close(self) -> None:
        self.env.close()


def build_server(runner: ToolRunner):
    """The MCP SDK's low-level server with ``tools/list`` and ``tools/call`` over ``runner``."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    from agentgym import __version__

    tools = [types.Tool(name=t["name"], description=t.get("description"), input_schema=t["parameters"])
             for t in runner.tools]

    async def list_tools(_ctx, _params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(_ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            # tools are quick, but a search over a large corpus should not hold up the session's reads
            text, ok = await anyio.to_thread.run_sync(runner.call, params.name, params.arguments)
        except KeyError as e:
            raise MCPError(types.INVALID_PARAMS, e.args[0]) from None
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=not ok)

    return Server(f"agentgym-{runner.env_id}", version=__version__,
                  instructions=f"Tools of the agentgym env {runner.env_id}.",
                  on_list_tools=list_tools, on_call_tool=call_tool)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentgym mcp", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("env_id", help="a registered env id with tools, e.g. ToolQA-v0")
    parser.add_argument("--env-kwargs", default="{}", metavar="JSON",
                        help='keyword arguments of gym.make as a JSON object, e.g. \'{"top_k": 5}\'')
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    require_for_script(["mcp", "mcp_types", "anyio"], "mcp", "agentgym mcp")
    kwargs = env_kwargs_from_json(args.env_kwargs)
    check_env(args.env_id, kwargs)
    try:
        runner = ToolRunner(args.env_id, kwargs)
    except ValueError as e:
        raise SystemExit(str(e)) from None

    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(runner)

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(serve)
    finally:
        runner.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
