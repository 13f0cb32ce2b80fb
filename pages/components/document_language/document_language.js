// Sets <html lang> and <html dir> of the page to the signed-in person's language (WCAG 3.1.1:
// screen readers pick their voice from it; a right-to-left language lays the page out from
// the right). Streamlit writes <html lang="en"> and never changes it; this runs on every page
// load and every change of language. `data.lang`, `data.dir`.
//
// `data.chrome` translates the few texts Streamlit writes itself (streamlit#1353): the skip
// link, the file uploader's button and size line, a field's "Press Enter to apply"
// (chrome.py). A MutationObserver on the document puts them back whenever React redraws.
const PATTERNS = [
  [/^(.+) per file$/, "{size} per file", "size"],
  [/^Press (.+) to apply$/, "Press {key} to apply", "key"],
  [/^Press (.+) to submit form$/, "Press {key} to submit form", "key"],
];
const PLACES = [
  '[data-testid="stSkipToContent"]',
  '[data-testid="stFileUploaderDropzone"]',
  '[data-testid="InputInstructions"]',
];

function translated(text, chrome) {
  const clean = text.trim();
  if (Object.prototype.hasOwnProperty.call(chrome, clean) && !clean.includes("{")) {
    return chrome[clean];
  }
  for (const [re, key, name] of PATTERNS) {
    const m = clean.match(re);
    if (m && chrome[key]) return chrome[key].replace(`{${name}}`, m[1]);
  }
  return null;
}

function translateChrome() {
  const chrome = window.__medsimChrome;
  if (!chrome) return;
  for (const place of document.querySelectorAll(PLACES.join(","))) {
    const walker = document.createTreeWalker(place, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const want = translated(node.nodeValue, chrome);
      if (want !== null && node.nodeValue !== want) node.nodeValue = want;
    }
  }
}

export default function (component) {
  const data = component.data || {};
  const root = document.documentElement;
  if (data.lang && root.lang !== data.lang) root.lang = data.lang;
  if (data.dir && root.dir !== data.dir) root.dir = data.dir;
  if (data.chrome) {
    // English back when the language changes back: the original texts are the keys.
    window.__medsimChrome = data.chrome;
    if (!window.__medsimChromeObserver) {
      window.__medsimChromeObserver = new MutationObserver(translateChrome);
      window.__medsimChromeObserver.observe(document.body, {
        subtree: true,
        childList: true,
        characterData: true,
      });
    }
    translateChrome();
  }
}
