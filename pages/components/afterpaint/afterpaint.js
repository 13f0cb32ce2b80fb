// Tells the page, once, that the browser has painted what came before it: its state
// `painted` becomes true after the text of the page is on screen, which reruns the whole
// page (pages/_charts.py). pages/_charts.py mounts it last on a page with charts, whose
// first run draws none: the charts come with that rerun, so Streamlit's chart code (plotly:
// a 4.7 MB chunk whose first run takes the main thread for 0.5-1 s on a busy machine) never
// runs before the figures and tables are painted.
//
// "Painted": no element of the main area still shows Streamlit's loading skeleton (a lazily
// loaded element such as a metric or a table waiting for its code), then two animation
// frames (the second starts after the frame that painted). At most WAIT_MS: the charts are
// never held back for longer than that.
const WAIT_MS = 3000;
const CHECK_MS = 50;

function skeletons() {
  const main = document.querySelector('[data-testid="stMain"]');
  return main ? main.querySelectorAll('[data-testid="stSkeleton"]').length : 0;
}

export default function (component) {
  const { data, setStateValue } = component;
  if (!data || data.painted || component.parentElement.__medsimPainting) return;
  component.parentElement.__medsimPainting = true;
  const start = performance.now();
  const report = () =>
    requestAnimationFrame(() => requestAnimationFrame(() => setStateValue("painted", true)));
  const wait = () => {
    if (skeletons() && performance.now() - start < WAIT_MS) setTimeout(wait, CHECK_MS);
    else report();
  };
  wait();
}
