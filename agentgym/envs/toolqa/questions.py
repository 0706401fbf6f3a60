"""Questions about the built-in world, each with gold aliases, evidence passages and an oracle plan.

Kinds:
- ``single_hop``: one fact of one entity ("In what year was X born?").
- ``bridge``: two hops through a relation ("In which city was the founder of C born?").
- ``comparison``: two entities compared on one attribute, sometimes needing ``calculate``
  ("Which was founded earlier, A or B?", "How many years apart were A and B founded?").
- ``long_form``: a short profile of an entity, with a reference answer and its key facts.

The oracle plan is the tool calls an ideal agent makes: a search per fact it needs (with the entity
name and the attribute's keywords), a calculation where one is needed, then the answer. The splits
are disjoint and stratified by kind, so every split has every kind.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from agentgym.envs.toolqa.world import World, _a, _fmt_int

SPLITS = ("train", "valid", "test")
SPLIT_SIZES = {"valid": 0.1, "test": 0.1}  # of each kind; the rest is train


@dataclass(frozen=True)
class PlanStep:
    """One oracle step: ``tool`` is search, open, calculate or answer; ``arg`` its main argument."""

    tool: str
    arg: str


@dataclass
class Question:
    id: str
    question: str
    answers: list[str]
    """Gold aliases (short form) or the reference answer (long form, one item)."""
    kind: str
    plan: list[PlanStep] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    """Ids of the passages that state the facts needed."""
    key_facts: list[str] = field(default_factory=list)
    """Long form: the facts a complete answer states."""
    split: str = "train"
    source: str = ""
    """Real data: the data set a question comes from (Search-R1's ``data_source``, else the file)."""

    @property
    def long_form(self) -> bool:
        return self.kind == "long_form"


# (kind, attribute) -> (question template, search keywords, how to render the value)
SINGLE_HOP = {
    ("person", "born"): ("In what year was {x} born?", "born", "year"),
    ("person", "birth_city"): ("In which city was {x} born?", "born city", "entity"),
    ("person", "occupation"): ("What is the occupation of {x}?", "occupation", "text"),
    ("person", "employer"): ("Which company does {x} work for?", "works for", "entity"),
    ("person", "alma_mater"): ("At which university did {x} study?", "studied university", "entity"),
    ("person", "hobby"): ("What is {x}'s lifelong passion outside work?", "passion outside work", "text"),
    ("city", "country"): ("In which country is the city of {x}?", "city country", "entity"),
    ("city", "population"): ("What is the population of {x}?", "population census", "int"),
    ("city", "founded"): ("In what year was the city of {x} founded?", "founded", "year"),
    ("city", "river"): ("On which river does {x} lie?", "river banks", "text"),
    ("country", "capital"): ("What is the capital of {x}?", "capital", "entity"),
    ("country", "continent"): ("On which continent is {x}?", "continent", "text"),
    ("university", "city"): ("In which city is the {x} located?", "located", "entity"),
    ("university", "founded"): ("In what year was the {x} founded?", "founded", "year"),
    ("university", "students"): ("How many students does the {x} enroll?", "students enrolls", "int"),
    ("company", "founded"): ("In what year was {x} founded?", "founded", "year"),
    ("company", "headquarters"): ("Where is {x} headquartered?", "headquartered", "entity"),
    ("company", "founder"): ("Who founded {x}?", "founded by", "entity"),
    ("company", "industry"): ("In which industry does {x} operate?", "company industry", "text"),
    ("company", "employees"): ("How many people does {x} employ?", "employs people", "int"),
    ("company", "product"): ("What is {x} best known for making?", "best known products", "text"),
    ("book", "author"): ("Who wrote {x}?", "written by", "entity"),
    ("book", "year"): ("In what year was {x} first published?", "first published", "year"),
    ("book", "genre"): ("What genre is {x}?", "genre book", "text"),
    ("book", "pages"): ("How many pages did the first edition of {x} have?", "first edition pages", "int"),
    ("book", "critic"): ("Which critic praised {x} as one of the finest books of its time?", "critic", "entity"),
}

# (kind, relation, attribute of the related entity, template)
BRIDGE = [
    ("company", "founder", "birth_city", "In which city was the founder of {x} born?"),
    ("company", "headquarters", "population", "What is the population of the city where {x} is headquartered?"),
    ("company", "founder", "born", "In what year was the founder of {x} born?"),
    ("person", "alma_mater", "founded", "In what year was the university that {x} attended founded?"),
    ("person", "employer", "founder", "Who founded the company that {x} works for?"),
    ("person", "birth_city", "country", "In which country is the city where {x} was born?"),
    ("person", "employer", "headquarters", "In which city is the employer of {x} headquartered?"),
    ("book", "author", "occupation", "What is the occupation of the author of {x}?"),
    ("book", "author", "birth_city", "In which city was the author of {x} born?"),
    ("university", "city", "river", "On which river lies the city where the {x} is located?"),
    ("city", "country", "capital", "What is the capital of the country that {x} is in?"),
]

# (kind, attribute, "which" template, larger wins?, difference template or None)
COMPARISON = [
    ("company", "founded", "Which was founded earlier, {a} or {b}?", False,
     "How many years apart were {a} and {b} founded?"),
    ("person", "born", "Who was born first, {a} or {b}?", False, "How many years apart were {a} and {b} born?"),
    ("city", "population", "Which city has a larger population, {a} or {b}?", True,
     "How many more people live in {a} than in {b}?"),
    ("book", "pages", "Which book had more pages in its first edition, {a} or {b}?", True, None),
    ("university", "students", "Which university enrolls more students, the {a} or the {b}?", True,
     "How many more students does the {a} enroll than the {b}?"),
]

LONG_FORM = {
    "company": ("Write a short profile of {x}: its industry, where it is headquartered, and when and by "
                "whom it was founded.", ["industry", "headquarters", "founded", "founder"]),
    "person": ("Write a short biography of {x}: occupation, year and city of birth, and employer.",
               ["occupation", "born", "birth_city", "employer"]),
    "book": ("Describe the book {x}: its genre, its author, when it was first published and how long "
             "its first edition was.", ["genre", "author", "year", "pages"]),
}


def _aliases(world: World, value, how: str) -> list[str]:
    if how == "entity":
        name = world.name(value)
        out = [name]
        if name.startswith("University of "):
            out.append(name[len("University of "):])
        return out
    if how == "int":
        return [_fmt_int(value), str(value)]
    return [str(value)]


def _render_value(world: World, value, how: str) -> str:
    return _aliases(world, value, how)[0]


def _search(world: World, entity_id: str, keywords: str) -> PlanStep:
    # "University of X" would make "university" a query word that matches every university passage
    return PlanStep("search", f"{world.name(entity_id).replace('University of ', '')} {keywords}")


def _value_kind(kind: str, attr: str) -> tuple[str, str]:
    _, keywords, how = SINGLE_HOP[(kind, attr)]
    return keywords, how


def generate_questions(world: World, seed: int = 0) -> list[Question]:
    """Every question about the world, before splitting (deterministic for a world and seed)."""
    rng = random.Random(f"agentgym-toolqa-questions-{seed}")
    out: list[Question] = []
    ents = world.entities

    for (kind, attr), (template, keywords, how) in SINGLE_HOP.items():
        for e in world.by_kind[kind]:
            value = e.facts[attr]
            answers = _aliases(world, value, how)
            out.append(Question(f"single-{e.id}-{attr}", template.format(x=e.name), answers, "single_hop",
                                [_search(world, e.id, keywords), PlanStep("answer", answers[0])],
                                [world.fact_passage[(e.id, attr)]]))

    for kind, rel, attr, template in BRIDGE:
        rel_keywords, _ = _value_kind(kind, rel)
        target_kind = ents[world.by_kind[kind][0].facts[rel]].kind
        keywords, how = _value_kind(target_kind, attr)
        for e in world.by_kind[kind]:
            mid = e.facts[rel]
            value = ents[mid].facts[attr]
            answers = _aliases(world, value, how)
            plan = [_search(world, e.id, rel_keywords), _search(world, mid, keywords),
                    PlanStep("answer", answers[0])]
            out.append(Question(f"bridge-{e.id}-{rel}-{attr}", template.format(x=e.name), answers, "bridge",
                                plan, [world.fact_passage[(e.id, rel)], world.fact_passage[(mid, attr)]]))

    for kind, attr, template, larger_wins, diff_template in COMPARISON:
        keywords, how = _value_kind(kind, attr)
        pool = world.by_kind[kind]
        for i in range(len(pool)):
            a, b = rng.sample(pool, 2)
            va, vb = a.facts[attr], b.facts[attr]
            if va == vb:
                continue
            evidence = [world.fact_passage[(a.id, attr)], world.fact_passage[(b.id, attr)]]
            searches = [_search(world, a.id, keywords), _search(world, b.id, keywords)]
            if diff_template is not None and i % 2 == 1:
                diff = abs(va - vb) if not larger_wins else va - vb
                if larger_wins and diff < 0:
                    a, b, va, vb, diff = b, a, vb, va, -diff
                    searches.reverse()
                    evidence.reverse()
                answers = _aliases(world, diff, "int")
                expr = f"{va} - {vb}" if va >= vb else f"{vb} - {va}"
                plan = [*searches, PlanStep("calculate", expr), PlanStep("answer", answers[0])]
                out.append(Question(f"compare-diff-{a.id}-{b.id}-{attr}",
                                    diff_template.format(a=a.name, b=b.name), answers, "comparison", plan,
                                    evidence))
            else:
                winner = a if ((va > vb) == larger_wins) else b
                answers = _aliases(world, winner.id, "entity")
                plan = [*searches, PlanStep("answer", answers[0])]
                out.append(Question(f"compare-{a.id}-{b.id}-{attr}", template.format(a=a.name, b=b.name),
                                    answers, "comparison", plan, evidence))

    for kind, (template, attrs) in LONG_FORM.items():
        for e in world.by_kind[kind]:
            facts = [_render_value(world, e.facts[a], _value_kind(kind, a)[1]) for a in attrs]
            reference = _reference(kind, e.name, facts)
            passages = sorted({world.fact_passage[(e.id, a)] for a in attrs})
            plan = [PlanStep("search", e.name), *(PlanStep("open", pid) for pid in passages),
                    PlanStep("answer", reference)]
            out.append(Question(f"long-{e.id}", template.format(x=e.name), [reference], "long_form", plan,
                                passages, key_facts=facts))
    return _dedupe(out)


def _reference(kind: str, name: str, facts: list[str]) -> str:
    if kind == "company":
        industry, hq, year, founder = facts
        return f"{name} is {_a(industry)} company headquartered in {hq}. It was founded in {year} by {founder}."
    if kind == "person":
        occupation, born, city, employer = facts
        return f"{name} is {_a(occupation)} born in {born} in {city}, who works for {employer}."
    genre, author, year, pages = facts
    return f"{name} is {_a(genre)} book by {author}, first published in {year} with {pages} pages."


def _dedupe(questions: list[Question]) -> list[Question]:
    seen, out = set(), []
    for q in questions:
        key = q.question.lower()
        if key not in seen:
            seen.add(key)
            out.append(q)
    return out


def split_questions(questions: list[Question], seed: int = 0) -> dict[str, list[Question]]:
    """Disjoint train/valid/test splits, stratified by kind; ids are prefixed with the split."""
    rng = random.Random(f"agentgym-toolqa-splits-{seed}")
    splits: dict[str, list[Question]] = {s: [] for s in SPLITS}
    kinds = sorted({q.kind for q in questions})
    for kind in kinds:
        pool = [q for q in questions if q.kind == kind]
        rng.shuffle(pool)
        n_valid = max(1, round(len(pool) * SPLIT_SIZES["valid"]))
        n_test = max(1, round(len(pool) * SPLIT_SIZES["test"]))
        parts = {"valid": pool[:n_valid], "test": pool[n_valid:n_valid + n_test], "train": pool[n_valid + n_test:]}
        for split, qs in parts.items():
            for q in qs:
                q.split = split
            splits[split].extend(qs)
    for split in SPLITS:
        rng.shuffle(splits[split])
    return splits
