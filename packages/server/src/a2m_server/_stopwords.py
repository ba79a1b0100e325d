"""Stop words of the languages the analyser knows best: words too common to carry a
query, as casefolded and diacritic-free as the analyser leaves them."""

# ruff: noqa: RUF001  (Cyrillic letters that look Latin are what Russian is written in)

from __future__ import annotations

__all__ = ["STOP_WORDS"]

STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t d ll m re ve don doesn didn isn aren wasn weren won
    anyone anything please let lets us get got also
    le la les l un une des du de d et est en au aux ce ces qu que qui quoi quel quelle quels
    il elle ils elles on nous vous je tu son sa ses leur pour par sur dans avec sans pas ne
    el los las lo una unos unas y es del al por con para su sus se como cual cuales donde
    cuando que quien
    der die das den dem des ein eine einer eines und ist sind zu von mit fur auf im wie was
    wer wo wann hat haben es sie er
    o os um uma e em no na nos nas do da dos das ao pelo pela
    и в во на с со по к ко у о об от до за из как что кто где когда какой какая какие это
    ли же бы не ни а но
    """.split()  # noqa: SIM905
)
