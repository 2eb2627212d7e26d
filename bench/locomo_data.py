"""LoCoMo for the memory benchmark (:mod:`bench.memory_locomo`): conversation ``conv-26`` read
from the shared archive into floors, gold observations and questions, and the seeded question
sample."""

from __future__ import annotations

import json
import random
import re
import sys
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


LOCOMO_ZIP = ROOT.parent / "shared" / "locomo" / "locomo10.zip"
CONVERSATION_FILE = "data/multimodal_dialog/locomo10_v2/26.json"
"""``conv-26`` inside the archive."""
NO_REPLY = "…"
"""The character's reply to a user line she does not answer before the session ends."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    """One gold observation: its running number, whose it is, its turn and its text."""

    number: int
    speaker: str
    dia_id: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Floor:
    """One floor as played: the user's line, the character's scripted line, and the gold
    observations of the turns it holds."""

    number: int
    session: int
    user_text: str
    reply_text: str
    dia_ids: tuple[str, ...]
    observations: tuple[Observation, ...] = ()
    session_date: str = ""  # the session's date as LoCoMo gives it ("1:56 pm on 8 May, 2023")


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """A LoCoMo question (its index in the conversation's list) and its evidence turns."""

    index: int
    text: str
    evidence: tuple[str, ...]
    category: int
    answer: str = ""  # the gold answer (category 2, temporal: a date or a span of time)


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    """The floors to play, every gold observation, and the questions."""

    user: str
    character: str
    floors: tuple[Floor, ...]
    observations: tuple[Observation, ...]
    questions: tuple[Question, ...]

    def evidence(self, question: Question) -> tuple[str, ...]:
        """The texts of the gold observations of the question's evidence turns."""
        wanted = set(question.evidence)
        return tuple(o.text for o in self.observations if o.dia_id in wanted)


def _dia_ids(value: Any) -> list[str]:
    """Dialogue ids from LoCoMo's fields, which hold one id, several, or a list of them."""
    items = value if isinstance(value, list) else [value]
    found: list[str] = []
    for item in items:
        found.extend(re.findall(r"D\d+:\d+", str(item)))
    return found


def _turn_text(turn: Mapping[str, Any]) -> str:
    text = str(turn.get("text") or "").strip()
    caption = turn.get("blip_caption")
    return f"{text} [shares {caption}]" if caption else text


def load_conversation(path: Path = LOCOMO_ZIP, *, sessions: int | None = None) -> Conversation:
    """conv-26 from the shared archive, mapped to floors (the first ``sessions`` sessions:
    all when None); questions whose evidence lies in later sessions are left out."""
    with zipfile.ZipFile(path) as archive:
        data: dict[str, Any] = json.loads(archive.read(CONVERSATION_FILE))
    user, character = str(data["speaker_a"]), str(data["speaker_b"])
    numbers = sorted(
        int(k.split("_")[1]) for k in data if re.fullmatch(r"session_\d+", k) and data[k]
    )
    if sessions is not None:
        numbers = numbers[:sessions]
    observations: list[Observation] = []
    by_turn: dict[str, list[Observation]] = {}
    floors: list[Floor] = []
    for n in numbers:
        for speaker, items in (data.get(f"session_{n}_observation") or {}).items():
            for text, ids in items:
                for dia_id in _dia_ids(ids)[:1]:  # an observation belongs to its first turn
                    obs = Observation(
                        number=len(observations) + 1,
                        speaker=str(speaker),
                        dia_id=dia_id,
                        text=" ".join(str(text).split()),
                    )
                    observations.append(obs)
                    by_turn.setdefault(dia_id, []).append(obs)
        floors.extend(_session_floors(data, n, user, len(floors)))
    floors = [
        Floor(
            number=f.number,
            session=f.session,
            user_text=f.user_text,
            reply_text=f.reply_text,
            dia_ids=f.dia_ids,
            observations=tuple(o for d in f.dia_ids for o in by_turn.get(d, ())),
            session_date=str(data.get(f"session_{f.session}_date_time") or ""),
        )
        for f in floors
    ]
    played = {d for f in floors for d in f.dia_ids}
    questions = tuple(
        Question(
            index=i,
            text=str(q["question"]),
            evidence=tuple(_dia_ids(q.get("evidence", []))),
            category=int(q.get("category") or 0),
            answer=str(q.get("answer") or ""),
        )
        for i, q in enumerate(data["qa"])
        if _dia_ids(q.get("evidence", [])) and set(_dia_ids(q["evidence"])) <= played
    )
    return Conversation(
        user=user,
        character=character,
        floors=tuple(floors),
        observations=tuple(observations),
        questions=questions,
    )


def _session_floors(data: Mapping[str, Any], n: int, user: str, before: int) -> list[Floor]:
    turns = list(data[f"session_{n}"])
    floors: list[Floor] = []
    i = 0
    while i < len(turns):
        number = before + len(floors) + 1
        if turns[i]["speaker"] == user:
            ids = [str(turns[i]["dia_id"])]
            user_text = _turn_text(turns[i])
            reply = NO_REPLY
            if i + 1 < len(turns) and turns[i + 1]["speaker"] != user:
                ids.append(str(turns[i + 1]["dia_id"]))
                reply = _turn_text(turns[i + 1])
                i += 1
        else:  # the character opens the session: the user's line is the date
            ids = [str(turns[i]["dia_id"])]
            user_text = f"({data.get(f'session_{n}_date_time', f'session {n}')})"
            reply = _turn_text(turns[i])
        floors.append(
            Floor(
                number=number, session=n, user_text=user_text, reply_text=reply, dia_ids=tuple(ids)
            )
        )
        i += 1
    return floors


def sample_questions(conversation: Conversation, count: int, seed: int) -> list[Question]:
    """``count`` questions drawn with ``seed`` among those with evidence observations."""
    eligible = [q for q in conversation.questions if conversation.evidence(q)]
    return random.Random(seed).sample(eligible, min(count, len(eligible)))
