"""GCD, generative classification disentanglement (SPEC §4.4): the actor is also trained as a
generative judge of its own actions, so that similar good and bad actions get apart in its hidden
states. Small pure pieces (none imports torch), and the extension that wires them into a step.

- :mod:`~agentgym.train.methods.gcd.labels`: good / bad / unlabelled steps read off a trajectory, and
  class balancing.
- :mod:`~agentgym.train.methods.gcd.judge`: the judge prompt, the verdict parser, the judge reward and
  the cold-start SFT targets.
- :mod:`~agentgym.train.methods.gcd.correction`: the "Common mistakes" list gathered from critiques and
  put into the system prompt, refreshed every K steps.
- :mod:`~agentgym.train.methods.gcd.correction_source`: whose list a refresh installs (the model's, or an
  offline count), with :mod:`~agentgym.train.methods.gcd.readability` (is it readable text) and
  :mod:`~agentgym.train.methods.gcd.english_words` (the common words it checks against).
- :mod:`~agentgym.train.methods.gcd.external`: an optional judge on any OpenAI-compatible endpoint.
- :mod:`~agentgym.train.methods.gcd.steps`: which steps of a batch are judged, and scoring the judgments.
- :mod:`~agentgym.train.methods.gcd.coldstart`: judge samples for the SFT cold start, from the real env.
- :mod:`~agentgym.train.methods.gcd.extension`: ``GCD``, the extension on the GRPO (or GiGPO) loop,
  and its settings (``--gcd.*``).
"""
