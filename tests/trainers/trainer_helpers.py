"""Shared settings of the trainer tests (a uniquely named module: every test dir has a conftest)."""

# single-hop ToolQA, two turns: cheap episodes a tiny model can learn the format of
TOOLQA_SMALL = '{"question_kinds": ["single_hop"], "max_turns": 2}'
