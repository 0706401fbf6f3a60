"""What every part of the trainer core stands on, importing nothing above it.

- :mod:`.errors`: ``ConfigError`` and the checks settings groups share; :mod:`.flags`: each
  setting's flag and flat name, ``build`` and ``to_dict``.
- :mod:`.world`: this process's place among ``torchrun``'s; :mod:`.device`: device, seeds,
  autocast; :mod:`.models`: loading a model and its tokenizer; :mod:`.threads`: CPU threads.
- :mod:`.state`: ``RunState``, all a run carries from step to step; :mod:`.metrics`:
  ``metrics.jsonl`` and TensorBoard.
- :mod:`.state_file`, :mod:`.checkpoint_record`, :mod:`.records`: files that run no code when
  read, a checkpoint's one typed record, and what a model directory records, read in one place.
"""
