"""The annotation widget's texts in a language: every visible string of the widget
(:class:`~data_schemas.widget.WidgetText`, :class:`~data_schemas.widget.PracticeText`)
translated, each plural message once per CLDR plural category of the language.

The widget picks a plural text with ``Intl.PluralRules(locale).select(n)``, so the page sends
the text of *every* category the language has (CLDR data through Babel: German has ``one`` and
``other``, Spanish also ``many`` for a million); a later language with other rules needs only
its catalogue. The text of a category is the catalogue's plural form for a sample count of
that category.
"""

from __future__ import annotations

import functools

from babel import Locale

from data_schemas.widget import PracticeText, WidgetText
from medsim_annot import i18n
from medsim_annot.i18n.languages import formatting_locale

#: Counts tried for a sample of each plural category: every small count, then powers of ten
#: (some categories hold only large round numbers, e.g. Spanish ``many`` for 1 000 000).
_CANDIDATES = (*range(0, 1001), *(10**k for k in range(4, 10)))


def number_locale(lang: str) -> str:
    """The CLDR locale whose numbers and plural rules *lang* uses (pseudo languages: English),
    as a BCP 47 tag for the browser's ``Intl``."""
    return formatting_locale(lang).replace("_", "-")


@functools.cache
def plural_samples(lang: str) -> dict[str, int]:
    """A count in each plural category of *lang* (category → the smallest count tried)."""
    locale = Locale.parse(number_locale(lang), sep="-")
    samples: dict[str, int] = {}
    for n in _CANDIDATES:
        samples.setdefault(locale.plural_form(n), n)
    return samples


@functools.cache
def widget_text(lang: str) -> tuple[WidgetText, PracticeText]:
    """The widget's texts in *lang* (every plural message per category of *lang*)."""
    with i18n.language(lang):
        return WidgetText.translated(plural_samples(lang)), PracticeText.translated()
