// minibert course: the student's "Check" button. A button on every notebook's toolbar (and "Check with the course
// service" in the command palette) saves the notebook, asks the lab's server extension (minibert_course.lab_check)
// to send it to the course's checking service, and shows the answer in a panel on the right: each test passed or
// failed, a failing visible test's message, the catalogue's diagnosis, the score and the checks left.
// The page never holds the student's token: the server extension reads it from course-check.json.
// Plain JavaScript on purpose: `jupyter labextension build .` bundles it as is, no TypeScript step to install.
import { ICommandPalette, ToolbarButton } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

const COMMAND = 'minibert-check:check';
const PANEL_ID = 'minibert-check-panel';

const POLL_MS = 2000;  // how often the panel asks for the answer of a check in flight
const WAIT_MS = 1800 * 1000;  // and for how long (the terminal command waits as long)

// A request to the lab's server extension: always an object, {status: 'refused', error} when it did not work
async function callServer(route, init) {
  const settings = ServerConnection.makeSettings();
  const url = settings.baseUrl.replace(/\/?$/, '/') + 'minibert-check/' + route;
  const response = await ServerConnection.makeRequest(url, init || {}, settings);
  const text = await response.text();
  let reply = null;
  try {
    reply = JSON.parse(text);
  } catch (err) {
    reply = null;
  }
  if (response.ok && reply && typeof reply === 'object') {
    return reply;
  }
  let why = `the lab answered ${response.status} ${response.statusText}`;
  if (response.status === 404) {
    why = "This lab's check extension is not running: start the lab with `make lab`.";
  } else if (response.status === 403) {
    why = 'The lab refused the request (403): reload the page, or log in to the lab again.';
  } else if (reply && reply.message) {
    why += `: ${reply.message}`;
  }
  return { status: 'refused', configured: false, error: why, message: why };
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;  // text only: nothing from the service is read as HTML
  return node;
}

class CheckPanel extends Widget {
  constructor() {
    super();
    this.id = PANEL_ID;
    this.addClass('minibert-CheckPanel');
    this.title.label = 'Course check';
    this.title.caption = 'The answer of the course\'s checking service';
    this.title.closable = true;
    this.showMessage('Press "Check" on a chapter\'s toolbar to run its hidden tests on the course\'s service.');
  }

  clear(state) {
    this.node.textContent = '';
    this.node.dataset.state = state;
    if (state !== 'idle' && state !== 'running') {  // one more answer shown (tests wait on this count)
      this.node.dataset.shown = String(Number(this.node.dataset.shown || 0) + 1);
    }
  }

  showMessage(text, state) {
    this.clear(state || 'idle');
    this.node.appendChild(element('p', 'minibert-CheckPanel-message', text));
  }

  showAnswer(answer) {
    if (answer.status === 'refused' || answer.status === 'error') {
      this.clear(answer.status);
      this.node.appendChild(element('p', 'minibert-CheckPanel-refused', answer.error || 'the check was not graded'));
      return;
    }
    this.clear('done');
    this.node.appendChild(element('h3', 'minibert-CheckPanel-title',
      `${answer.chapter}, check ${answer.attempt}`));
    this.node.appendChild(element('p', 'minibert-CheckPanel-when', answer.submitted));
    const list = element('ul', 'minibert-CheckPanel-tests');
    for (const test of answer.tests || []) {
      const item = element('li', 'minibert-CheckPanel-test ' + (test.passed ? 'minibert-mod-passed' : 'minibert-mod-failed'));
      item.appendChild(element('span', 'minibert-CheckPanel-mark', test.passed ? 'passed' : 'FAILED'));
      item.appendChild(element('span', 'minibert-CheckPanel-name',
        ` ${test.name} (${test.points} pt, ${test.hidden ? 'hidden' : 'visible'})`));
      if (!test.passed && test.message) {
        item.appendChild(element('pre', 'minibert-CheckPanel-failure', test.message));
      }
      list.appendChild(item);
    }
    this.node.appendChild(list);
    if (answer.diagnosis && answer.diagnosis.length) {
      this.node.appendChild(element('p', 'minibert-CheckPanel-diagnosis-title', answer.diagnosis.length === 1
        ? 'This looks like a mistake from the course\'s catalogue:'
        : 'This looks like one of these mistakes from the course\'s catalogue:'));
      const why = element('ul', 'minibert-CheckPanel-diagnosis');
      for (const line of answer.diagnosis) why.appendChild(element('li', '', line));
      this.node.appendChild(why);
    }
    if (answer.flagged) this.node.appendChild(element('p', 'minibert-CheckPanel-flagged', answer.flagged));
    let summary = `score ${answer.score} / ${answer.max_score}; checks left this hour: ${answer.checks_left}`;
    if (answer.deadline) summary += `; deadline ${answer.deadline}`;
    this.node.appendChild(element('p', 'minibert-CheckPanel-summary', summary));
  }
}

const plugin = {
  id: 'minibert-check:plugin',
  description: 'A Check button that runs a chapter\'s hidden tests on the course\'s checking service.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette],
  activate: (app, tracker, palette) => {
    let panel = null;
    let running = null;  // the notebook being checked: one check at a time

    const showPanel = () => {
      if (!panel || panel.isDisposed) {
        panel = new CheckPanel();
        app.shell.add(panel, 'right', { rank: 1000 });
      }
      app.shell.activateById(panel.id);
      return panel;
    };

    const checkNotebook = async (notebook) => {
      const view = showPanel();
      if (!notebook) {
        view.showMessage('Open a chapter\'s notebook first.');
        return;
      }
      if (running) {
        view.showMessage(`A check of ${running} is still running: its answer will show here.`, 'running');
        return;
      }
      const path = notebook.context.localPath;
      running = path;  // before the first await: a second click cannot send a second check
      try {
        const status = await callServer('config');
        if (!status.configured) {
          view.showMessage(status.message || status.error, 'not-configured');
          return;
        }
        view.showMessage(`Saving ${path} and sending it to ${status.url}…`, 'running');
        await notebook.context.save();
        const queued = await callServer('check', { method: 'POST', body: JSON.stringify({ path }) });
        if (queued.status === 'refused') {
          view.showAnswer(queued);
          return;
        }
        view.showMessage(`${path} is check ${queued.attempt}: waiting for the grade (a minute or two)…`, 'running');
        const end = Date.now() + WAIT_MS;
        while (Date.now() < end) {
          await sleep(POLL_MS);
          const answer = await callServer('answer?poll=' + encodeURIComponent(queued.poll));
          if (answer.status === 'done' || answer.status === 'error' || answer.status === 'refused') {
            view.showAnswer(answer);
            return;
          }
        }
        view.showAnswer({ status: 'refused', error: 'No answer yet: see `python -m minibert_course.check --status` ' +
          'in a terminal later.' });
      } catch (err) {
        view.showAnswer({ status: 'refused', error: `the check did not happen: ${err}` });
      } finally {
        running = null;
      }
    };

    app.commands.addCommand(COMMAND, {
      label: 'Check with the course service',
      caption: 'Save this notebook and run its hidden tests on the course\'s checking service (limited checks)',
      isEnabled: () => tracker.currentWidget !== null,
      execute: () => checkNotebook(tracker.currentWidget)
    });
    if (palette) palette.addItem({ command: COMMAND, category: 'Course' });

    app.docRegistry.addWidgetExtension('Notebook', {
      createNew: (notebook) => {
        const button = new ToolbarButton({
          className: 'minibert-CheckButton',
          label: 'Check',
          tooltip: 'Check with the course service: save, then run the hidden tests (a few checks per hour)',
          onClick: () => { checkNotebook(notebook); }
        });
        notebook.toolbar.insertItem(10, 'minibertCheck', button);
        return button;
      }
    });
  }
};

export default plugin;
