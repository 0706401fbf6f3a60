"""A fictional world, generated deterministically from a seed, that ToolQA's questions are about.

Every entity is invented (made-up names from syllables), so a model cannot answer from memory: it
has to search. The world has six kinds of entity with attributes and relations between them:

- country: continent, capital (city)
- city: country, population, founding year, river
- person: birth year, birth city, occupation, employer (company), alma mater (university)
- company: founding year, headquarters (city), founder (person), industry, employees
- university: city, founding year, students
- book: author (person), publication year, genre, pages

Each entity is rendered into several passages (an overview, and one passage per group of facts), so
a fact sits in one specific passage and multi-hop questions need several searches.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import lru_cache

_ONSETS = ["b", "br", "c", "d", "dr", "f", "g", "gr", "h", "j", "k", "kr", "l", "m", "n", "p", "pr",
           "qu", "r", "s", "st", "t", "tr", "v", "w", "z", "th", "sh", "ch", "x"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ei", "ou", "ia", "ae"]
_CODAS = ["", "", "n", "r", "l", "s", "th", "m", "x", "nd", "rk", "st"]

CONTINENTS = ["Aurelia", "Borealis", "Cyrrhia", "Dunmere"]
OCCUPATIONS = ["architect", "botanist", "chemist", "composer", "economist", "engineer", "geologist",
               "historian", "journalist", "mathematician", "painter", "physician", "poet", "sculptor"]
INDUSTRIES = ["aerospace", "agriculture", "banking", "biotechnology", "shipping", "mining", "software",
              "textiles", "publishing", "energy", "robotics", "pharmaceuticals"]
GENRES = ["mystery", "science fiction", "biography", "poetry", "history", "fantasy", "philosophy", "travel"]
HOBBIES = ["chess", "sailing", "beekeeping", "falconry", "rowing", "pottery", "astronomy", "fencing",
           "gardening", "birdwatching", "calligraphy", "mountaineering"]
PRODUCTS = ["turbines", "seed drills", "ledgers", "vaccines", "cargo ships", "drill bits", "compilers",
            "looms", "printing presses", "solar panels", "robot arms", "tablets"]
RIVERS = ["Ostra", "Velun", "Marrow", "Tesk", "Quill", "Sabre", "Lorn", "Ember", "Duvet", "Palis",
          "Harrow", "Inde", "Yarrow", "Corvin", "Bellis", "Noor"]


@dataclass
class Entity:
    """One entity: a unique id, a kind, a unique name and its facts (attribute -> value)."""

    id: str
    kind: str
    name: str
    facts: dict[str, object] = field(default_factory=dict)


@dataclass
class Passage:
    id: str
    title: str
    text: str
    entity_id: str
    facts: tuple[str, ...]
    """The attributes of the entity this passage states."""


@dataclass
class World:
    entities: dict[str, Entity]
    passages: list[Passage]
    by_kind: dict[str, list[Entity]]
    fact_passage: dict[tuple[str, str], str]
    """(entity id, attribute) -> id of the passage stating it."""

    def name(self, entity_id: str) -> str:
        return self.entities[entity_id].name

    def passage(self, passage_id: str) -> Passage:
        return self._passage_index[passage_id]

    def __post_init__(self) -> None:
        self._passage_index = {p.id: p for p in self.passages}


class _Names:
    """Unique pronounceable names, deterministic for a given rng."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[str] = set()

    def word(self, syllables: int) -> str:
        parts = [self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) for _ in range(syllables)]
        return ("".join(parts) + self.rng.choice(_CODAS)).capitalize()

    def unique(self, make) -> str:
        for _ in range(1000):
            name = make()
            if name.lower() not in self.used:
                self.used.add(name.lower())
                return name
        raise RuntimeError("name space exhausted")


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def _fmt_int(n: int) -> str:
    return f"{n:,}"


def build_world(seed: int = 0, scale: int = 1) -> World:
    """Generate the world. ``scale`` multiplies the entity counts (the default gives 600 entities and
    2,030 passages)."""
    rng = random.Random(f"agentgym-toolqa-world-{seed}")
    names = _Names(rng)
    entities: dict[str, Entity] = {}
    by_kind: dict[str, list[Entity]] = {}

    def add(kind: str, name: str, **facts) -> Entity:
        ent = Entity(f"{kind}-{len(by_kind.get(kind, [])):04d}", kind, name, dict(facts))
        entities[ent.id] = ent
        by_kind.setdefault(kind, []).append(ent)
        return ent

    counts = {"country": 20, "city": 100, "university": 50, "company": 100, "person": 250, "book": 80}
    counts = {k: v * scale for k, v in counts.items()}
    for _ in range(counts["country"]):
        add("country", names.unique(lambda: names.word(2) + rng.choice(["ia", "land", "stan", "ora", ""])),
            continent=rng.choice(CONTINENTS))
    countries = by_kind["country"]
    for i in range(counts["city"]):
        country = countries[i % len(countries)] if i < len(countries) else rng.choice(countries)
        add("city", names.unique(lambda: names.word(rng.randint(2, 3))), country=country.id,
            population=rng.randrange(20_000, 4_000_000, 100), founded=rng.randint(800, 1900),
            river=rng.choice(RIVERS) + " River")
    cities = by_kind["city"]
    for country in countries:
        capital = next(c for c in cities if c.facts["country"] == country.id)
        country.facts["capital"] = capital.id
    for _ in range(counts["university"]):
        city = rng.choice(cities)
        add("university", names.unique(lambda: f"University of {names.word(2)}"), city=city.id,
            founded=rng.randint(1100, 1990), students=rng.randrange(2_000, 60_000, 50))
    universities = by_kind["university"]
    # companies need founders (people) and people need employers: create people first, then
    # companies, then link employers.
    for _ in range(counts["person"]):
        add("person", names.unique(lambda: f"{names.word(2)} {names.word(rng.randint(2, 3))}"),
            born=rng.randint(1850, 2000), birth_city=rng.choice(cities).id,
            occupation=rng.choice(OCCUPATIONS), alma_mater=rng.choice(universities).id,
            hobby=rng.choice(HOBBIES))
    people = by_kind["person"]
    for i in range(counts["company"]):
        founder = people[i % len(people)]
        add("company", names.unique(lambda: f"{names.word(2)} {rng.choice(['Industries', 'Group', 'Works', 'Labs', 'Holdings', 'Systems'])}"),
            founded=rng.randint(1850, 2020), headquarters=rng.choice(cities).id, founder=founder.id,
            industry=rng.choice(INDUSTRIES), employees=rng.randrange(50, 250_000, 10),
            product=rng.choice(PRODUCTS))
    companies = by_kind["company"]
    for person in people:
        person.facts["employer"] = rng.choice(companies).id
    for _ in range(counts["book"]):
        add("book", names.unique(lambda: f"The {names.word(2)} {rng.choice(['Chronicle', 'Garden', 'Letters', 'Voyage', 'Machine', 'Silence', 'Atlas', 'Tide'])}"),
            author=rng.choice(people).id, year=rng.randint(1880, 2023), genre=rng.choice(GENRES),
            pages=rng.randint(90, 1200), critic=rng.choice(people).id)
    passages, fact_passage = _render(entities, by_kind, rng)
    return World(entities, passages, by_kind, fact_passage)


def _render(entities: dict[str, Entity], by_kind: dict[str, list[Entity]], rng: random.Random):
    """Each entity becomes an overview passage plus one passage per fact group."""
    n = lambda eid: entities[eid].name  # noqa: E731
    passages: list[Passage] = []
    fact_passage: dict[tuple[str, str], str] = {}

    per_entity: dict[str, int] = {}

    def emit(ent: Entity, title: str, text: str, facts: tuple[str, ...]) -> None:
        pid = f"{ent.id}-p{per_entity.get(ent.id, 0)}"
        per_entity[ent.id] = per_entity.get(ent.id, 0) + 1
        passages.append(Passage(pid, title, text, ent.id, facts))
        for f in facts:
            fact_passage[(ent.id, f)] = pid

    for ent in entities.values():
        f = ent.facts
        if ent.kind == "country":
            emit(ent, ent.name, f"{ent.name} is a country on the continent of {f['continent']}. "
                 f"Travellers from across {f['continent']} visit {ent.name} for its markets and festivals.",
                 ("continent",))
            emit(ent, f"{ent.name} (government)", f"The capital of {ent.name} is {n(f['capital'])}, "
                 f"which is also the seat of its parliament.", ("capital",))
        elif ent.kind == "city":
            emit(ent, ent.name, f"{ent.name} is a city in {n(f['country'])}. It lies on the banks of the "
                 f"{f['river']}.", ("country", "river"))
            emit(ent, f"{ent.name} (history)", f"{ent.name} was founded in {f['founded']}. Its old quarter "
                 f"still keeps the street plan laid out by its founders.", ("founded",))
            emit(ent, f"{ent.name} (demographics)", f"According to the latest census, {ent.name} has a "
                 f"population of {_fmt_int(f['population'])} people.", ("population",))
        elif ent.kind == "university":
            emit(ent, ent.name, f"The {ent.name} is a public university located in {n(f['city'])}.", ("city",))
            emit(ent, f"{ent.name} (history)", f"The {ent.name} was founded in {f['founded']} and today "
                 f"enrolls about {_fmt_int(f['students'])} students.", ("founded", "students"))
            emit(ent, f"{ent.name} (campus)", f"The main campus of the {ent.name} sits near the centre of "
                 f"{n(f['city'])}, a short walk from the banks of the {entities[f['city']].facts['river']}.", ())
        elif ent.kind == "person":
            emit(ent, ent.name, f"{ent.name} is {_a(f['occupation'])} born in {f['born']}.", ("occupation", "born"))
            emit(ent, f"{ent.name} (early life)", f"{ent.name} was born in the city of {n(f['birth_city'])} "
                 f"and studied at the {n(f['alma_mater'])}.", ("birth_city", "alma_mater"))
            emit(ent, f"{ent.name} (career)", f"{ent.name} works for {n(f['employer'])}, where colleagues "
                 f"describe them as a careful and patient {f['occupation']}.", ("employer",))
            emit(ent, f"{ent.name} (personal life)", f"Outside work, {ent.name} is known for a lifelong "
                 f"passion for {f['hobby']}.", ("hobby",))
        elif ent.kind == "company":
            emit(ent, ent.name, f"{ent.name} is {_a(f['industry'])} company headquartered in "
                 f"{n(f['headquarters'])}. It employs {_fmt_int(f['employees'])} people.",
                 ("industry", "headquarters", "employees"))
            emit(ent, f"{ent.name} (history)", f"{ent.name} was founded in {f['founded']} by "
                 f"{n(f['founder'])}.", ("founded", "founder"))
            emit(ent, f"{ent.name} (products)", f"{ent.name} is best known for its {f['product']}, "
                 f"which are sold across {entities[entities[f['headquarters']].facts['country']].facts['continent']}.",
                 ("product",))
        elif ent.kind == "book":
            emit(ent, ent.name, f"{ent.name} is {_a(f['genre'])} book written by {n(f['author'])}.",
                 ("genre", "author"))
            emit(ent, f"{ent.name} (publication)", f"{ent.name} was first published in {f['year']}; the "
                 f"first edition ran to {f['pages']} pages.", ("year", "pages"))
            emit(ent, f"{ent.name} (reception)", f"The critic {n(f['critic'])} called {ent.name} one of the "
                 f"finest {f['genre']} books of its time.", ("critic",))
    return passages, fact_passage


@lru_cache(maxsize=4)
def default_world(seed: int = 0) -> World:
    """The built-in world, built once per process."""
    return build_world(seed)
