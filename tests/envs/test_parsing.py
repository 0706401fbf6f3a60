from agentgym.envs.parsing import parse_embodied_action, parse_tool_action, sanitize
from agentgym.envs.toolqa.tools import ALL_TOOLS, SEARCH


def test_tool_call_with_think():
    p = parse_tool_action('<think>need data</think>\n<tool_call>{"name": "search", "arguments": '
                          '{"query": "x", "top_k": 2}}</tool_call>', ALL_TOOLS)
    assert p.ok and p.kind == "tool_call" and p.name == "search" and p.arguments == {"query": "x", "top_k": 2}
    assert p.think == "need data"


def test_answer_and_its_failures():
    assert parse_tool_action(" <answer> Paris </answer>\n", ALL_TOOLS).text == "Paris"
    assert "empty" in parse_tool_action("<answer>  </answer>", ALL_TOOLS).error
    assert "not closed" in parse_tool_action("<answer>Paris", ALL_TOOLS).error
    assert "exactly one" in parse_tool_action("<answer>a</answer><answer>b</answer>", ALL_TOOLS).error
    assert "outside" in parse_tool_action("So: <answer>a</answer>", ALL_TOOLS).error
    assert "nested" in parse_tool_action("<answer>a <think>x</think></answer>", ALL_TOOLS).error


def test_tool_call_schema_errors():
    cases = {
        '<tool_call>{"name": "search"}</tool_call>': "missing required argument 'query'",
        '<tool_call>{"name": "search", "arguments": {"query": "x", "top_k": 99}}</tool_call>': "<= 10",
        '<tool_call>{"name": "search", "arguments": {"query": "x", "top_k": true}}</tool_call>': "integer",
        '<tool_call>{"name": "search", "arguments": {"query": "x", "lang": "en"}}</tool_call>': "unknown argument",
        '<tool_call>{"name": "search", "arguments": [1]}</tool_call>': "JSON object",
        '<tool_call>{"name": "zap", "arguments": {}}</tool_call>': "unknown tool",
        '<tool_call>{name: search}</tool_call>': "not valid JSON",
        '<tool_call>["search"]</tool_call>': '{"name"',
    }
    for raw, message in cases.items():
        assert message in parse_tool_action(raw, ALL_TOOLS).error, raw


def test_tags_format_only_knows_search_and_answer():
    p = parse_tool_action("<search>tallest mountain</search>", [SEARCH], "tags")
    assert p.kind == "tool_call" and p.arguments == {"query": "tallest mountain"}
    assert parse_tool_action("<tool_call>{}</tool_call>", [SEARCH], "tags").error


def test_embodied_actions():
    assert parse_embodied_action("<action>go to  fridge 1</action>").text == "go to fridge 1"
    assert parse_embodied_action("  open drawer 2 \n").text == "open drawer 2"
    assert parse_embodied_action("<think>hm</think><action>look</action>").text == "look"
    assert "several lines" in parse_embodied_action("look\ninventory").error
    assert parse_embodied_action("<action>a</action><action>b</action>").error
    assert parse_embodied_action("").error and parse_embodied_action("<action> </action>").error
    assert parse_embodied_action("x" * 400).error


def test_sanitize_never_fails():
    assert sanitize(b"\xff ok") == "\ufffd ok"
    assert sanitize("a\x00b") == "ab"
    assert sanitize("\udcff").encode("utf-8")
    assert len(sanitize("x" * 10, max_chars=4)) == 4
