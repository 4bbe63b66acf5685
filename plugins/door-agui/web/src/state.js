// The shared state panel: the run's state as the agent and the page both edit it (AG-UI
// STATE_SNAPSHOT / STATE_DELTA, applied by the official client), shown as JSON, editable.
// A saved edit becomes the agent's state (agent.setState) and goes to the server with the
// next message (RunAgentInput.state), with the thread's state version it was based on
// (forwardedProps.onedoor.stateVersion), so an edit made on a state that changed
// elsewhere meanwhile is refused (409 state_conflict) instead of overwriting it.

export class StatePanel {
  constructor(agent) {
    this.agent = agent;
    this.version = null; // the stored thread's state version the page's state is based on
    this.root = document.getElementById("state-panel");
    this.editor = document.getElementById("state-editor");
    this.label = document.getElementById("state-version");
    this.note = document.getElementById("state-note");
    this.dirty = false;
    this.editor.addEventListener("input", () => {
      this.dirty = true;
      this.note.textContent = "not saved";
    });
    document.getElementById("state-save").addEventListener("click", () => this.save());
  }

  // The state (and its stored version, when known) as the page now holds it.
  show(state, version) {
    if (version !== undefined) this.version = version;
    this.label.textContent = this.version === null ? "" : `version ${this.version}`;
    const empty = !state || (typeof state === "object" && !Array.isArray(state) && Object.keys(state).length === 0);
    this.root.dataset.empty = String(empty);
    if (!this.dirty) this.editor.value = empty ? "{}" : JSON.stringify(state, null, 2);
  }

  // Adopt a thread's state from the server (a reload, a switch, a conflict).
  load(state, version) {
    this.dirty = false;
    this.note.textContent = "";
    this.agent.setState(state && typeof state === "object" ? state : {});
    this.show(this.agent.state, version ?? null);
  }

  save() {
    let value;
    try {
      value = JSON.parse(this.editor.value);
    } catch (error) {
      this.note.textContent = `not JSON: ${error?.message ?? error}`;
      return false;
    }
    if (!value || typeof value !== "object" || Array.isArray(value)) {
      this.note.textContent = "the state is a JSON object";
      return false;
    }
    this.dirty = false;
    this.agent.setState(value);
    this.note.textContent = "saved: the agent sees it with your next message";
    this.show(value);
    return true;
  }

  // What a run sends beside the state: the version it is based on.
  forwarded() {
    return this.version === null ? {} : { stateVersion: this.version };
  }

  // A run's terminal event: the thread's state version now.
  finished(event) {
    const version = event?.metadata?.onedoor?.stateVersion;
    if (Number.isInteger(version)) {
      this.version = version;
      this.show(this.agent.state);
    }
  }
}
