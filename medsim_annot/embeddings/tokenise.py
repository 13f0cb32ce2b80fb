"""How a term becomes the words looked up in a word embedding.

The default follows the papers (Schulz & Juric 2020, §4.2): a term is lower-cased and split
on every run of characters that are not letters or digits (Unicode-aware, so ``"Ménière's
disease"`` gives ``["ménière", "s", "disease"]``). Both steps are configurable: keep the
case for case-sensitive embeddings (e.g. the Pyysalo et al. 2013 PubMed vectors), give
another split pattern (a regular expression matching the *separators*), or a set of stop
words to drop.

Repeated words are kept: ``"fever fever"`` is two occurrences of one word, so the averaged
term vector and the word-pair metrics weight it twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Separators: every run of characters that are neither letters nor digits (underscore too).
DEFAULT_SPLIT = r"[\W_]+"


@dataclass(frozen=True)
class Tokeniser:
    """Split a term into words.

    Parameters
    ----------
    lowercase : bool
        Lower-case the term first (default ``True``).
    split : str
        Regular expression matching the separators between words (default: any run of
        non-alphanumeric characters, :data:`DEFAULT_SPLIT`).
    stopwords : frozenset of str
        Words dropped after splitting (compared after lower-casing when *lowercase*).

    Examples
    --------
    >>> Tokeniser()("Myocardial infarction (disorder)")
    ['myocardial', 'infarction', 'disorder']
    >>> Tokeniser(lowercase=False)("Type-2 Diabetes")
    ['Type', '2', 'Diabetes']
    >>> Tokeniser(split=r"\\s+")("covid-19 pneumonia")
    ['covid-19', 'pneumonia']
    >>> Tokeniser(stopwords=frozenset({"of"}))("fracture of femur")
    ['fracture', 'femur']
    """

    lowercase: bool = True
    split: str = DEFAULT_SPLIT
    stopwords: frozenset = field(default_factory=frozenset)
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)  # from split

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "_pattern", re.compile(self.split))
        except re.error as exc:
            raise ValueError(
                f"token split pattern {self.split!r} is not a valid regular expression: {exc}"
            ) from None

    def __call__(self, term: str) -> list[str]:
        text = term.lower() if self.lowercase else term
        words = [w for w in self._pattern.split(text) if w]
        if self.stopwords:
            words = [w for w in words if w not in self.stopwords]
        return words

    def describe(self) -> str:
        """One line for reports: how terms were split."""
        case = "lower-cased" if self.lowercase else "case kept"
        stop = f", {len(self.stopwords)} stop words dropped" if self.stopwords else ""
        return f"{case}, split on /{self.split}/{stop}"


DEFAULT_TOKENISER = Tokeniser()


def tokenise(term: str, tokeniser: Tokeniser = DEFAULT_TOKENISER) -> list[str]:
    """Split *term* into words with *tokeniser* (default: lower-case, split on non-alphanumerics).

    >>> tokenise("Chronic Kidney Disease, stage 3")
    ['chronic', 'kidney', 'disease', 'stage', '3']
    """
    return tokeniser(term)
