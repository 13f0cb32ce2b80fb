// Tells the page, once, that the browser has painted what came before it: its state
// `painted` becomes true after the text of the page is on screen. pages/_charts.py mounts
// one beside each chart's slot and draws the chart only then, so that Streamlit's chart
// code (plotly: a 4.7 MB chunk whose first run takes the main thread for 0.5-1 s on a busy
// machine) never runs before the figures and tables around it are painted.
//
// "Painted": no element of the main area still shows Streamlit's loading skeleton (a lazily
// loaded element such as a metric or a table waiting for its code), then two animation
// frames (the second starts after the frame that painted). At most WAIT_MS: the chart is
// never held back for longer than that.
//
// The reports of the charts of one page go one at a time, GAP_MS apart: Streamlit sends the
// widget changes of one browser task as one message naming one fragment, and each report
// must rerun its own fragment.
const WAIT_MS = 3000;
const CHECK_MS = 50;
const GAP_MS = 30;

function send(report) {
  const q = (window.__medsimAfterPaint ||= { queue: [], busy: false });
  q.queue.push(report);
  if (!q.busy) pump(q);
}

function pump(q) {
  const report = q.queue.shift();
  q.busy = Boolean(report);
  if (!report) return;
  report();
  setTimeout(() => pump(q), GAP_MS);
}

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
    requestAnimationFrame(() =>
      requestAnimationFrame(() => send(() => setStateValue("painted", true))),
    );
  const wait = () => {
    if (skeletons() && performance.now() - start < WAIT_MS) setTimeout(wait, CHECK_MS);
    else report();
  };
  wait();
}
