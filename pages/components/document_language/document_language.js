// Sets <html lang> and <html dir> of the page to the signed-in person's language (WCAG 3.1.1:
// screen readers pick their voice from it; a right-to-left language lays the page out from
// the right). Streamlit writes <html lang="en"> and never changes it; this runs on every page
// load and every change of language. `data.lang`, `data.dir`.
export default function (component) {
  const data = component.data || {};
  const root = document.documentElement;
  if (data.lang && root.lang !== data.lang) root.lang = data.lang;
  if (data.dir && root.dir !== data.dir) root.dir = data.dir;
}
