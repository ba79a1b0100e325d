"""Writes ``dataset.json``: a memory-QA evaluation set for lexical recall.

    uv run python tests/benchmarks/recall_quality/generate.py

Facts are what agents store (people, preferences, dates, configurations, decisions,
numbers); distractors are chatter built from the same names and words; each question is
phrased as a person would ask it, not in the fact's words: other inflections and plurals,
stop words, paraphrase, typos, accents left out, and questions in French, Spanish, German,
Portuguese, Russian, Chinese and Japanese about facts written in those languages. Each
question names its fact. The split (``tune`` / ``heldout``) is by fact, so no fact is
seen in both halves. Seeded: the same script always writes the same file."""

# ruff: noqa: RUF001  (the questions are written in Cyrillic and CJK on purpose)
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

SEED = 20261201
DISTRACTORS = 6000

PEOPLE = [
    "Maya", "Liam", "Priya", "Tomas", "Aiko", "Jonas", "Fatima", "Oliver", "Chen", "Sofia",
    "Mateo", "Hana", "Noah", "Amara", "Viktor", "Elena", "Ravi", "Greta", "Kofi", "Ines",
    "Lucas", "Yara", "Ethan", "Mila", "Omar", "Zoe", "Arjun", "Lena", "Diego", "Freya",
    "Kenji", "Nadia", "Pablo", "Astrid", "Samir", "Clara", "Hugo", "Leila", "Emil", "Rosa",
    "Felix", "Anya", "Marco", "Ingrid", "Tariq", "Julia", "Bruno", "Selin", "Oscar", "Maren",
]  # fmt: skip
TEAMS = [
    "platform", "billing", "search", "mobile", "data", "security", "growth", "support",
    "infra", "payments", "identity", "analytics", "design", "research", "checkout", "ads",
]  # fmt: skip
SERVICES = [
    "gateway", "ledger", "indexer", "notifier", "scheduler", "uploader", "resolver",
    "tracker", "renderer", "exporter", "importer", "crawler", "mailer", "router", "cache",
    "auth", "webhook", "reporter", "metrics", "queue", "archiver", "thumbnailer",
]  # fmt: skip
PROJECTS = [
    "Atlas", "Beacon", "Comet", "Dynamo", "Echo", "Falcon", "Granite", "Harbor", "Ion",
    "Juniper", "Keystone", "Lumen", "Mosaic", "Nimbus", "Orion", "Pioneer", "Quasar",
    "Redwood", "Sequoia", "Titan", "Umbra", "Vortex", "Willow", "Zephyr",
]  # fmt: skip
FOODS = ["peanuts", "shellfish", "gluten", "dairy", "eggs", "soy", "sesame", "walnuts",
         "strawberries", "penicillin", "cats", "pollen"]  # fmt: skip
DRINKS = ["green tea", "oat milk lattes", "sparkling water", "espresso", "chai", "cocoa",
          "orange juice", "kombucha"]  # fmt: skip
CITIES = ["Lisbon", "Osaka", "Toronto", "Nairobi", "Berlin", "Austin", "Krakow", "Seoul",
          "Dublin", "Lima", "Oslo", "Melbourne"]  # fmt: skip
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]  # fmt: skip
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
ENVS = ["production", "staging", "development", "sandbox"]
SECRETS = ["deploy", "signing", "backup", "database", "API", "SSH"]
TIMEZONES = ["UTC", "Pacific time", "Central European time", "Tokyo time"]
DATASTORES = ["PostgreSQL", "MySQL", "Cassandra", "Redis", "DynamoDB", "MongoDB"]
LANGS = ["Rust", "Go", "Kotlin", "TypeScript", "Python", "Elixir"]


@dataclass
class Template:
    kind: str
    fact: str
    questions: list[str]
    """Each is a way a person asks; one is picked per fact."""


# English: the question never repeats the fact's exact phrasing. {a}... are slots.
ENGLISH = [
    Template("config", "The {env} {secret} key rotates every {n} days",
             ["when does the {env} {secret} key rotate next?",
              "how often do we rotate {env} {secret} keys?",
              "what's the rotation schedule for the {secret} keys in {env}?"]),
    Template("person", "{person} is allergic to {food}",
             ["what allergies does {person} have?",
              "does {person} have any allergy I should know about?",
              "which allergens should {person} avoid?"]),
    Template("preference", "{person} prefers {drink} in the morning",
             ["what does {person} like drinking in the mornings?",
              "what's {person}'s preferred morning drink?",
              "which drinks does {person} prefer?"]),
    Template("date", "{person}'s birthday is on {month} {day}",
             ["when is {person} celebrating birthdays?",
              "what date is {person}'s birthday?",
              "remind me of the day {person} was born"]),
    Template("number", "The {team} team ordered {n} GPUs for project {project}",
             ["how many gpu did the {team} team order?",
              "what was ordered by {team} for {project}?",
              "how many graphics cards for the {project} project?"]),
    Template("decision", "We decided to migrate {service} from {store1} to {store2}",
             ["what was decided about the {service} migration?",
              "which database is {service} migrating to?",
              "are we moving {service} off {store1}?"]),
    Template("config", "The {service} service listens on port {port}",
             ["which port is {service} listening on?",
              "what port does the {service} listen to?",
              "{service} port number?"]),
    Template("config", "{service} logs record timestamps in {tz}",
             ["what timezone are the {service} log dates in?",
              "are {service} logs timestamped in {tz}?",
              "which timezone do {service} logging timestamps use?"]),
    Template("person", "{person} manages the {team} team since {year}",
             ["who is the manager of the {team} team?",
              "who's managing {team}?",
              "since when has {person} been a manager?"]),
    Template("person", "{person} lives in {city} and works remotely",
             ["where does {person} live?",
              "which city is {person} living in?",
              "is {person} working remote from {city}?"]),
    Template("date", "The {team} standup meets every {weekday} at {hour} o'clock",
             ["when are the {team} standups?",
              "what day does {team} have its standup meeting?",
              "at what time is the {team} team meeting?"]),
    Template("number", "The {project} budget for {year} is {n} thousand dollars",
             ["how much money is budgeted for {project}?",
              "what's the {year} budget of {project}?",
              "{project} budgets?"]),
    Template("decision", "The {team} team chose {lang} for the new {service}",
             ["which language did {team} choose for the {service}?",
              "what are they writing the new {service} in?",
              "why did {team} pick {lang}?"]),
    Template("config", "Backups of {service} are kept for {n} weeks",
             ["how long do we keep {service} backups?",
              "what's the retention of the {service} backup?",
              "for how many weeks are {service} backups retained?"]),
    Template("preference", "{person} wants code reviews done before noon",
             ["when does {person} want reviews?",
              "what are {person}'s code reviewing preferences?",
              "does {person} prefer morning reviews?"]),
    Template("date", "The {project} launch is scheduled for {month} {day}",
             ["when is {project} launching?",
              "what's the launch date of {project}?",
              "is the {project} launch date set?"]),
]  # fmt: skip

# Other languages: (lang, template). Questions use other inflections or drop accents.
FOREIGN = [
    ("fr", Template("preference", "{person} préfère le café crème sans sucre",
                    ["qu'est-ce que {person} aime boire comme cafe ?",
                     "comment {person} prend-il son café ?"])),
    ("fr", Template("date", "La réunion d'équipe {team} a lieu chaque {weekday_fr} à {hour} heures",
                    ["quand ont lieu les réunions de l'équipe {team} ?",
                     "a quelle heure est la reunion {team} ?"])),
    ("es", Template("person", "{person} vive en {city} con su familia",
                    ["¿dónde vive {person}?", "¿en qué ciudad viven {person} y su familia?"])),
    ("es", Template("config", "La contraseña del servidor {service} caduca cada {n} días",
                    ["¿cuándo caducan las contraseñas de {service}?",
                     "¿cada cuantos dias caduca la contrasena de {service}?"])),
    ("de", Template("decision", "Das Team {team} hat entschieden, {service} auf {lang} umzustellen",
                    ["was hat {team} über {service} entschieden?",
                     "welche Entscheidung gab es zu {service}?"])),
    ("de", Template("number", "Für das Projekt {project} wurden {n} Server bestellt",
                    ["wie viele Server hat {project} bestellt?",
                     "wieviele server fur {project}?"])),
    ("pt", Template("preference", "{person} não gosta de reuniões às sextas-feiras",
                    ["{person} gosta de reuniao na sexta-feira?",
                     "quais reuniões {person} não gosta?"])),
    ("ru", Template("config", "Сервер базы данных {service} перезагружается каждую ночь",
                    ["когда перезагружают сервер {service}?",
                     "как часто перезагрузка базы данных {service}?"])),
    ("ru", Template("person", "{person} работает в команде {team} с {year} года",
                    ["в какой команде работает {person}?", "с какого года {person} в команде {team}?"])),
    ("ru", Template("number", "Бюджет проекта {project} составляет {n} тысяч рублей",
                    ["какой бюджет у проекта {project}?", "сколько денег в бюджете {project}?"])),
    ("zh", Template("config", "{service}服务的数据库每天凌晨备份一次",
                    ["{service}的数据库什么时候备份？", "{service}服务多久备份？"])),
    ("zh", Template("person", "{person}负责{team}团队的招聘工作",
                    ["谁负责{team}团队招聘？", "{person}负责什么工作？"])),
    ("zh", Template("date", "{project}项目将于{month_n}月{day}日上线",
                    ["{project}项目什么时候上线？", "{project}的上线日期是哪天？"])),
    ("ja", Template("preference", "{person}さんは毎朝緑茶を飲むのが好きです",
                    ["{person}さんは朝に何を飲みますか？", "{person}さんの好きな飲み物は？"])),
    ("ja", Template("config", "{service}のログは東京の時間で記録されます",
                    ["{service}のログの時間はどこの時間ですか？", "{service}ログの記録時間は？"])),
]  # fmt: skip

WEEKDAYS_FR = ["lundi", "mardi", "mercredi", "jeudi", "vendredi"]

# Distractors: chatter sharing the facts' names and words, none stating a fact's answer.
CHATTER = [
    "{person} said the {service} deploy went fine yesterday",
    "reminder: the {team} retro moved to {weekday}",
    "does anyone know where the {project} docs live?",
    "{person} asked about the {secret} keys again during standup",
    "lunch with {person} in {city} was great",
    "the {service} dashboard is slow this morning",
    "{person} will be out of office until {month} {day}",
    "we should rotate the on-call schedule for {team}",
    "the {team} team is hiring a new engineer",
    "{person} shared a great article about {lang}",
    "the {project} demo went well, thanks everyone",
    "who broke the {service} build? it is red again",
    "{person} is bringing cake for the {team} team on {weekday}",
    "ticket: {service} returns 500 errors when the port is busy",
    "the {env} cluster had a short outage at {hour} o'clock",
    "{person} thinks {store1} is easier to operate than {store2}",
    "note to self: review the {project} budget slides",
    "the {team} team celebrated the {project} milestone",
    "{person} and {person2} paired on the {service} migration plan",
    "please update the {service} runbook with the new timestamps format",
    "{person} likes the new coffee machine",
    "when does the next {team} offsite happen? nobody knows yet",
    "how many people are coming to the {city} meetup?",
    "the {service} logs are noisy, we should reduce them",
    "{person} is on vacation in {city} for two weeks",
    "backup drill for {service} postponed to {month}",
    "{person} reviewed the code for {project} before the launch",
    "what time is it in {city} right now?",
    "the morning meeting of {team} was cancelled",
    "{person} ordered new keyboards for the {team} team",
    "{person} a parlé du projet {project} pendant la réunion",
    "{person} está de vacaciones en {city}",
    "{person} hat heute keine Zeit für {project}",
    "{person} trabalha no projeto {project}",
    "{person} написал отчёт о проекте {project}",
    "команда {team} обсуждала сервер {service} вчера",
    "{person}今天在{city}开会",
    "{team}团队明天讨论{project}项目",
    "{person}さんは今日{city}に出張です",
    "{service}の設定を確認してください",
]  # fmt: skip


def typo(word: str, rng: random.Random) -> str:
    """One keyboard slip in a word of five letters or more: a swap, a drop or a double."""
    if len(word) < 5 or not word.isalpha():
        return word
    i = rng.randrange(1, len(word) - 1)
    how = rng.choice(["swap", "drop", "double"])
    if how == "swap":
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if how == "drop":
        return word[:i] + word[i + 1 :]
    return word[:i] + word[i] + word[i:]


def with_typo(question: str, rng: random.Random) -> str:
    words = question.split(" ")
    candidates = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
    if not candidates:
        return question
    i = rng.choice(candidates)
    words[i] = typo(words[i], rng)
    return " ".join(words)


def slots(rng: random.Random) -> dict[str, str]:
    person, person2 = rng.sample(PEOPLE, 2)
    store1, store2 = rng.sample(DATASTORES, 2)
    month = rng.randrange(12)
    return {
        "person": person,
        "person2": person2,
        "team": rng.choice(TEAMS),
        "service": rng.choice(SERVICES),
        "project": rng.choice(PROJECTS),
        "food": rng.choice(FOODS),
        "drink": rng.choice(DRINKS),
        "city": rng.choice(CITIES),
        "month": MONTHS[month],
        "month_n": str(month + 1),
        "day": str(rng.randint(1, 28)),
        "weekday": rng.choice(WEEKDAYS),
        "weekday_fr": rng.choice(WEEKDAYS_FR),
        "env": rng.choice(ENVS),
        "secret": rng.choice(SECRETS),
        "tz": rng.choice(TIMEZONES),
        "store1": store1,
        "store2": store2,
        "lang": rng.choice(LANGS),
        "n": str(rng.choice([2, 3, 4, 6, 8, 12, 14, 16, 30, 45, 60, 90, 120, 365])),
        "port": str(rng.randint(1025, 9999)),
        "year": str(rng.randint(2015, 2026)),
        "hour": str(rng.randint(7, 17)),
    }


def named_slots(question: str, values: dict[str, str]) -> list[str]:
    return [s for s in values if "{" + s + "}" in question]


def clashes(
    values: dict[str, str], named: list[str], taken: list[tuple[dict[str, str], list[str]]]
) -> bool:
    """Whether a question could not tell this fact from one already taken of the same
    template, or one of theirs could not tell it from this one."""
    for other, other_named in taken:
        if all(other[s] == values[s] for s in named):
            return True
        if all(other[s] == values[s] for s in other_named):
            return True
    return False


def build() -> dict[str, object]:
    rng = random.Random(SEED)
    records: list[dict[str, object]] = []
    questions: list[dict[str, object]] = []
    taken: dict[str, list[tuple[dict[str, str], list[str]]]] = {}
    plan = [("en", t) for t in ENGLISH for _ in range(16)] + [
        (lang, t) for lang, t in FOREIGN for _ in range(6)
    ]
    rng.shuffle(plan)
    for lang, template in plan:
        asked = rng.choice(template.questions)
        for _ in range(50):
            values = slots(rng)
            named = named_slots(asked, values)
            if not clashes(values, named, taken.setdefault(template.fact, [])):
                break
        else:
            continue
        taken[template.fact].append((values, named))
        fact_id = f"fact-{len([r for r in records if str(r['id']).startswith('fact')]):04d}"
        records.append(
            {
                "id": fact_id,
                "content": template.fact.format(**values),
                "age_days": round(rng.uniform(0, 365), 2),
                "salience": round(rng.uniform(0, 1), 2),
            }
        )
        question = asked.format(**values)
        kind = "paraphrase" if lang == "en" else "foreign"
        if lang == "en" and rng.random() < 0.2:
            question, kind = with_typo(question, rng), "typo"
        elif lang == "en" and rng.random() < 0.15:
            question, kind = question.lower(), "lowercase"
        questions.append(
            {
                "question": question,
                "fact": fact_id,
                "lang": lang,
                "kind": kind,
                "template": template.kind,
                "split": "tune" if rng.random() < 0.5 else "heldout",
            }
        )
    for index in range(DISTRACTORS):
        records.append(
            {
                "id": f"chatter-{index:05d}",
                "content": rng.choice(CHATTER).format(**slots(rng)),
                "age_days": round(rng.uniform(0, 365), 2),
                "salience": round(rng.uniform(0, 1), 2),
            }
        )
    rng.shuffle(records)
    return {"seed": SEED, "records": records, "questions": questions}


def main() -> None:
    data = build()
    out = Path(__file__).with_name("dataset.json")
    out.write_text(json.dumps(data, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    questions = data["questions"]
    assert isinstance(questions, list)
    facts = sum(1 for r in data["records"] if str(r["id"]).startswith("fact"))  # type: ignore[union-attr]
    print(f"wrote {out}: {facts} facts, {len(data['records']) - facts} distractors, "  # type: ignore[arg-type]
          f"{len(questions)} questions")  # fmt: skip


if __name__ == "__main__":
    main()
