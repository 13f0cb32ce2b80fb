// Loads Streamlit's own element code (the lazily loaded plotly chunk, ~4.7 MB, and the admin pages'
// smaller element chunks) into this browser while it is idle, so that the first Dashboard of a fresh
// browser does not wait for it. First a <link rel="modulepreload">: fetched and compiled, off the main thread,
// into the page's module map. Then, after RUN_AFTER_MS more and only when the browser is
// idle, the module is run (an import of the same URL): running it takes the main thread for
// a moment, which an admin who clicks on at once should not wait for; one who reads Study
// setup first finds the Dashboard's charts ready. The URL is resolved against the app's main
// script, as the app resolves its own import, so it is the same module instance.
// `data.chunks`: file names in Streamlit's static/js; `data.run_after_ms`: the wait before the
// run (default RUN_AFTER_MS; the admin sign-in form asks for a short one: the run then falls
// while the admin types the password, and no page load meets it). Once per page load; a
// failure only means the chart loads its code itself, as without this. Once the code has run,
// `window.__medsimChartCodeRan` is true (what tests/test_browser_signin.py waits for).
const RUN_AFTER_MS = 3000;

function whenIdle(fn) {
  if ("requestIdleCallback" in window) requestIdleCallback(fn, { timeout: 4000 });
  else setTimeout(fn, 500);
}

export default function (component) {
  const data = component.data || {};
  const chunks = data.chunks || [];
  const runAfter = Number.isFinite(data.run_after_ms) ? data.run_after_ms : RUN_AFTER_MS;
  if (!chunks.length || window.__medsimChartCodePreloaded) return;
  window.__medsimChartCodePreloaded = true;
  const main = document.querySelector('script[type="module"][src*="static/js/index."]');
  if (!main) return;
  const urls = chunks.map((chunk) => new URL("./" + chunk, main.src).href);
  whenIdle(() => {
    for (const href of urls) {
      const link = document.createElement("link");
      link.rel = "modulepreload";
      link.crossOrigin = "";
      link.href = href;
      document.head.appendChild(link);
    }
    const run = () =>
      Promise.all(urls.map((u) => import(u)))
        .then(() => { window.__medsimChartCodeRan = true; })
        .catch(() => {});
    setTimeout(() => whenIdle(run), runAfter);
  });
}
