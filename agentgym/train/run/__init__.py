"""One training run: its settings, how it is built and saved, where it stands, what it logs.

- :mod:`.config`: every trainer's settings, nested dataclass groups parsed by ``tyro``;
  :mod:`.flags`: each setting's flag and flat name; :mod:`.presets`: named env presets;
  :mod:`.env_check`: the env settings checked before anything is built.
- :mod:`.setup`: what a run trains with (``RunSetup``), built once, saved and restored;
  :mod:`.helpers`: device, seeding, env batch, model and tokenizer loading.
- :mod:`.state`: ``RunState``, all a run carries from step to step; :mod:`.view`: ``RunView``, what
  an extension may read of the run.
- :mod:`.checkpoint`, :mod:`.checkpoint_record`, :mod:`.state_file`: checkpoints that resume
  exactly, their one typed record and reader, and files that run no code when read.
- :mod:`.metrics`: ``metrics.jsonl`` and TensorBoard; :mod:`.threads`: CPU threads.
"""
