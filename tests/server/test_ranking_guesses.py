"""The §5 blend with typo guesses among the candidates: what was asked for comes first and
sets the scale; a guess, however strong its own match, follows with no higher score."""

from __future__ import annotations

from a2m_server import ranking

NOW = 1_000_000_000_000


def _candidate(
    name: str, lexical: float, *, guessed: bool = False, age_s: int = 0
) -> ranking.Candidate:
    return ranking.Candidate(
        id=name,
        created_at=NOW - age_s * 1000,
        salience=1.0,
        tier=None,
        lexical=lexical,
        guessed=guessed,
    )


def _blend(*candidates: ranking.Candidate) -> list[tuple[str, float]]:
    scored = ranking.blend(
        list(candidates), now=NOW, half_lives={}, use_lexical=True, use_vector=False
    )
    return [(c.id, s) for c, s in scored]


def test_a_strong_recent_guess_follows_every_record_found_by_what_was_asked() -> None:
    without = _blend(_candidate("asked", 2.0, age_s=86_400), _candidate("weak", 0.5, age_s=60))
    scored = _blend(
        _candidate("asked", 2.0, age_s=86_400),
        _candidate("weak", 0.5, age_s=60),
        _candidate("guess", 40.0, guessed=True),
    )
    assert [name for name, _ in scored] == ["asked", "weak", "guess"]
    # The guess neither sets the scale of the others' relevance nor outscores them.
    assert scored[:2] == without
    assert scored[2][1] <= scored[1][1]


def test_guesses_alone_rank_among_themselves() -> None:
    scored = _blend(_candidate("a", 1.0, guessed=True), _candidate("b", 3.0, guessed=True))
    assert [name for name, _ in scored] == ["b", "a"]
    assert scored[0][1] > scored[1][1] > 0
