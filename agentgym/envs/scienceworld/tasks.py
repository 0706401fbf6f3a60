"""The 30 ScienceWorld tasks (names as the engine knows them) and their variation splits, kept as
data so registering env ids and drawing a variation need no Java and no ``scienceworld`` import.

The engine numbers each task's variations 0..N-1 and splits them into contiguous blocks: train
first (about half), then dev, then test. ``SPLIT_SIZES`` records the block sizes as the engine
(scienceworld 1.2.3) reports them; ``tests/envs/test_scienceworld_engine.py`` checks them against
the engine's own ``getVariationsTrain/Dev/Test``."""

TASKS: tuple[tuple[str, str, str], ...] = (
    # (engine task name, task number, title)
    ('boil', '1-1', 'Changes of State (Boiling)'),
    ('melt', '1-2', 'Changes of State (Melting)'),
    ('freeze', '1-3', 'Changes of State (Freezing)'),
    ('change-the-state-of-matter-of', '1-4', 'Changes of State (Any)'),
    ('use-thermometer', '2-1', 'Use Thermometer'),
    ('measure-melting-point-known-substance', '2-2', 'Measuring Boiling Point (known)'),
    ('measure-melting-point-unknown-substance', '2-3', 'Measuring Boiling Point (unknown)'),
    ('power-component', '3-1', 'Create a circuit'),
    ('power-component-renewable-vs-nonrenewable-energy', '3-2', 'Renewable vs Non-renewable Energy'),
    ('test-conductivity', '3-3', 'Test Conductivity (known)'),
    ('test-conductivity-of-unknown-substances', '3-4', 'Test Conductivity (unknown)'),
    ('find-living-thing', '4-1', 'Find a living thing'),
    ('find-non-living-thing', '4-2', 'Find a non-living thing'),
    ('find-plant', '4-3', 'Find a plant'),
    ('find-animal', '4-4', 'Find an animal'),
    ('grow-plant', '5-1', 'Grow a plant'),
    ('grow-fruit', '5-2', 'Grow a fruit'),
    ('chemistry-mix', '6-1', 'Mixing (generic)'),
    ('chemistry-mix-paint-secondary-color', '6-2', 'Mixing paints (secondary colours)'),
    ('chemistry-mix-paint-tertiary-color', '6-3', 'Mixing paints (tertiary colours)'),
    ('lifespan-longest-lived', '7-1', 'Identify longest-lived animal'),
    ('lifespan-shortest-lived', '7-2', 'Identify shortest-lived animal'),
    ('lifespan-longest-lived-then-shortest-lived', '7-3', 'Identify longest-then-shortest-lived animal'),
    ('identify-life-stages-1', '8-1', 'Identify life stages (plant)'),
    ('identify-life-stages-2', '8-2', 'Identify life stages (animal)'),
    ('inclined-plane-determine-angle', '9-1', 'Inclined Planes (determine angle)'),
    ('inclined-plane-friction-named-surfaces', '9-2', 'Friction (known surfaces)'),
    ('inclined-plane-friction-unnamed-surfaces', '9-3', 'Friction (unknown surfaces)'),
    ('mendelian-genetics-known-plant', '10-1', 'Mendelian Genetics (known plants)'),
    ('mendelian-genetics-unknown-plant', '10-2', 'Mendelian Genetics (unknown plants)'),
)

TASK_NAMES: tuple[str, ...] = tuple(name for name, _, _ in TASKS)


def task_env_id(name: str) -> str:
    """The registered id of one task's env, e.g. ``boil`` -> ``ScienceWorld-Boil-v0``."""
    return "ScienceWorld-" + "".join(part.capitalize() for part in name.split("-")) + "-v0"


# task -> (train, dev, test) variation counts; 7207 variations in all.
SPLIT_SIZES: dict[str, tuple[int, int, int]] = {
    'boil': (14, 7, 9),
    'melt': (14, 7, 9),
    'freeze': (14, 7, 9),
    'change-the-state-of-matter-of': (14, 7, 9),
    'use-thermometer': (270, 135, 135),
    'measure-melting-point-known-substance': (218, 109, 109),
    'measure-melting-point-unknown-substance': (150, 75, 75),
    'power-component': (10, 5, 5),
    'power-component-renewable-vs-nonrenewable-energy': (10, 5, 5),
    'test-conductivity': (450, 225, 225),
    'test-conductivity-of-unknown-substances': (300, 150, 150),
    'find-living-thing': (150, 75, 75),
    'find-non-living-thing': (150, 75, 75),
    'find-plant': (150, 75, 75),
    'find-animal': (150, 75, 75),
    'grow-plant': (62, 31, 33),
    'grow-fruit': (62, 31, 33),
    'chemistry-mix': (16, 8, 8),
    'chemistry-mix-paint-secondary-color': (18, 9, 9),
    'chemistry-mix-paint-tertiary-color': (18, 9, 9),
    'lifespan-longest-lived': (62, 31, 32),
    'lifespan-shortest-lived': (62, 31, 32),
    'lifespan-longest-lived-then-shortest-lived': (62, 31, 32),
    'identify-life-stages-1': (6, 3, 5),
    'identify-life-stages-2': (4, 2, 4),
    'inclined-plane-determine-angle': (84, 42, 42),
    'inclined-plane-friction-named-surfaces': (692, 346, 348),
    'inclined-plane-friction-unnamed-surfaces': (80, 40, 42),
    'mendelian-genetics-known-plant': (60, 30, 30),
    'mendelian-genetics-unknown-plant': (240, 120, 120),
}

SPLITS: tuple[str, ...] = ("train", "dev", "test")
SPLIT_ALIASES: dict[str, str] = {"valid": "dev", "validation": "dev", "val": "dev", "eval": "dev"}


LEVELS: tuple[str, ...] = ("L0", "L1", "L2")
"""The evaluation levels; which tasks each holds is :mod:`agentgym.envs.scienceworld.levels`."""
TRAIN_ALL = "train_all"
"""The train variations of every task, the held-out ones included."""

ENV_SPLITS: tuple[str, ...] = SPLITS + (TRAIN_ALL,) + LEVELS
"""Every split name the env takes: the engine's three, ``train_all`` and the levels (see
:mod:`agentgym.envs.scienceworld.levels`)."""

# split name -> the engine's variation split it plays
VARIATION_SPLIT = {"L0": "train", "L1": "test", "L2": "test", TRAIN_ALL: "train"}


def variation_split(split: str) -> str:
    """The engine split (train/dev/test) whose variations ``split`` plays."""
    return VARIATION_SPLIT.get(split, split)


def canonical_split(split: str) -> str:
    """``train``/``dev``/``test``, ``train_all`` or a level ``L0``/``L1``/``L2``; ``valid`` (and
    ``validation``, ``val``) mean ``dev``."""
    key = str(split)
    if key.upper() in ("L0", "L1", "L2"):
        return key.upper()
    name = SPLIT_ALIASES.get(key.lower(), key.lower())
    if name not in ENV_SPLITS:
        raise ValueError(f"unknown ScienceWorld split {split!r}; expected one of {ENV_SPLITS} or 'valid'")
    return name


def canonical_task(name: str) -> str:
    """An engine task name from its name, its number (``1-1``) or its env id suffix (``Boil``)."""
    key = str(name).strip()
    for task, number, _ in TASKS:
        if key.lower() in (task, number, task.replace("-", "")) or key == task_env_id(task)[len("ScienceWorld-"):-3]:
            return task
    raise ValueError(f"unknown ScienceWorld task {name!r}; expected one of {list(TASK_NAMES)}")


def num_variations(task: str) -> int:
    return sum(SPLIT_SIZES[task])


def split_variations(task: str, split: str) -> range:
    """The variation indices of ``task`` in ``split``, e.g. ``split_variations('boil', 'dev') == range(14, 21)``.

    A level plays the variations of an engine split: L0 (and ``train_all``) the train ones, L1 and
    L2 the test ones."""
    split = variation_split(canonical_split(split))
    train, dev, test = SPLIT_SIZES[task]
    start = {"train": 0, "dev": train, "test": train + dev}[split]
    return range(start, start + SPLIT_SIZES[task][SPLITS.index(split)])
