// Loads Streamlit's own chart code (the lazily loaded plotly chunk, ~4.7 MB) into this
// browser while it is idle, so that the first Dashboard chart of a fresh browser does not
// wait for it to be fetched, parsed and run. `data.chunks`: file names of Streamlit's
// static/js folder, resolved against the app's main script exactly as the app imports them
// (same URL: the same module instance, loaded once). Once per page load; errors are ignored
// (the chart then loads its code itself, as without this).
export default function (component) {
  const chunks = (component.data && component.data.chunks) || [];
  if (!chunks.length || window.__medsimChartCodePreloaded) return;
  window.__medsimChartCodePreloaded = true;
  const main = document.querySelector('script[type="module"][src*="static/js/index."]');
  if (!main) return;
  const load = () => {
    for (const chunk of chunks) {
      import(new URL("./" + chunk, main.src).href).catch(() => {});
    }
  };
  if ("requestIdleCallback" in window) {
    requestIdleCallback(load, { timeout: 4000 });
  } else {
    setTimeout(load, 1000);
  }
}
