"""ALFWorld on the real engines: the env (``env``), its engine wiring (``engine``), game data
(``data``), goal-condition progress (``progress``) and the offline game generator (``generate``,
over ``scenes``, ``tasks`` and ``problem``). See docs/envs/alfworld.md."""
