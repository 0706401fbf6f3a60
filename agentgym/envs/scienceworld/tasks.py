"""The 30 ScienceWorld tasks (names as the engine knows them), kept as data so registering their
env ids needs no Java and no ``scienceworld`` import."""

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
