"""Adapters that expose agentgym envs to RL engines users already run (optional extras)."""
