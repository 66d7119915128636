// A page's action buttons (start, stop, pause, delete…): each asks for a
// confirmation when it has one, runs its mutation, and says on the page
// when it fails. One runs at a time: its button says so meanwhile.
import { h, replace } from '../dom.js';
import { describe } from '../api.js';
import { confirm, alertBox } from '../ui.js';

// actionBar returns {el, error, update(can)}. noun names the object in
// errors ("Could not stop the instance: …"); actions maps a key (the
// button's id is action-<key>) to {verb, busy, danger, confirm(), run()}:
// confirm returns the dialog's {title, body, ok} or nothing to skip it,
// run does the work. update(can) shows the actions whose key can[key] is
// true.
export function actionBar({ id, noun, actions }) {
  const el = h('div', { class: 'actions', id, role: 'group', 'aria-label': 'Actions' });
  const error = alertBox();
  let busy = '';
  let can = {};

  function render() {
    replace(el, Object.entries(actions).filter(([k]) => can[k] || busy === k).map(([k, a]) =>
      h('button', {
        type: 'button', id: `action-${k}`, class: `btn ${a.danger ? 'btn-danger' : ''}`, disabled: !!busy,
        onclick: () => act(k),
      }, busy === k ? a.busy : a.verb)));
  }

  async function act(k) {
    const a = actions[k];
    const ask = a.confirm?.();
    if (ask && !await confirm({ ...ask, danger: a.danger })) return;
    error.clear();
    busy = k;
    render();
    try {
      await a.run();
    } catch (err) {
      if (err.name === 'AbortError') return;
      error.show(`Could not ${a.verb.toLowerCase()} the ${noun}: ${describe(err)}`);
    } finally {
      busy = '';
      if (el.isConnected) render();
      document.getElementById(`action-${k}`)?.focus();
    }
  }

  return {
    el,
    error: error.el,
    update(next) {
      can = next;
      render();
    },
  };
}
