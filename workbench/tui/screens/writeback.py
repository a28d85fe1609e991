"""Write back: the YAML diff first (syntax-coloured), then an atomic write with a backup, both
done by the core (``workbench.config.writeback.block``). Errors (the file changed on disk, a value
HoloDeck would reject) are shown in place, and the Write button goes (``y`` does nothing): nothing
is written then, nor when the file already holds the setting. When
the file on disk is no longer what the app read, "Reload (r)" reads it again and shows the diff
against it (the knobs keep their values). The title and the buttons always show; the diff gets
the height left and scrolls (80x24 included).

A runtime that would not read the block (HoloDeck 0.7, whose loader refuses it) gets a
:class:`Refusal` instead of a diff: its one line, what to use instead, no Write button, and a
button for the alternative when the dashboard has one. Subclasses write something else with the
same dialog (:meth:`WriteBackScreen.make_plan` and :meth:`WriteBackScreen.write`: a runtime's own
configuration, :mod:`~workbench.tui.screens.config_write`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from rich.syntax import Syntax
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from workbench.config.filtering import ToolFiltering
from workbench.config.writeback import block as writeback
from workbench.errors import HoloTuneError

#: What the dialog dismisses with when asked to read the file again and diff anew.
RELOAD: Literal["reload"] = "reload"
#: ... when asked for the alternative a refusal offers (HoloDeck 0.7's allowlists).
ALTERNATIVE: Literal["alternative"] = "alternative"
Result = Path | Literal["reload", "alternative"] | None


class ShownPlan(Protocol):
    """What the dialog shows of a plan: the diff and the warnings."""

    @property
    def diff(self) -> str: ...

    @property
    def warnings(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class Refusal:
    """Why the runtime would not read what the dialog writes (the core's one line), what to
    use instead, and the label of the button that does it here (None: none)."""

    why: str
    instead: str
    alternative: str | None = None


class WriteBackScreen(ModalScreen[Result]):
    """Dismisses with the backup path (or the file path with no backup) once written, None if
    cancelled, :data:`RELOAD` to read the file again (it changed on disk), :data:`ALTERNATIVE`
    for what a :class:`Refusal` offers instead. With a refusal nothing is planned: the dialog
    says why, shows no Write button and the file is not touched."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,n", "cancel", "cancel", id="writeback-cancel"),
        Binding("y,ctrl+s", "confirm", "write", id="writeback-confirm"),
        Binding("r", "reload", "reload", id="writeback-reload"),
        Binding("a", "alternative", "instead", id="writeback-alternative"),
    ]
    #: What is written, for the title.
    WHAT = "tool_filtering"
    #: The title, formatted with :attr:`WHAT` and the file's name.
    TITLE = "Write {what} back to {name}?"

    def __init__(
        self,
        path: Path,
        setting: ToolFiltering,
        *,
        original: bytes | None = None,
        current: ToolFiltering | None = None,
        refusal: Refusal | None = None,
        worse: str | None = None,
    ) -> None:
        """``original`` is the file as the app read it (the write is refused if it changed since);
        ``current`` the block as loaded, so a key whose ``${VAR}`` already gives the value stays;
        ``worse``: why the setting is measured worse than the file's on the labelled cases (the
        rule of :mod:`workbench.evaluate.verdict`): the first ``y`` then asks again, the second
        writes."""
        super().__init__()
        self.path = path
        self.setting = setting
        self.original = original
        self.current = current
        self.refusal = refusal
        self.worse = worse
        self._confirmed = worse is None
        self.plan: ShownPlan | None = None
        self._message = Text()

    def compose(self) -> ComposeResult:
        with Vertical(id="writeback-box"):
            title = self.TITLE.format(what=self.WHAT, name=self.path.name)
            yield Static(title, id="writeback-title")
            yield Static("", id="writeback-warnings")
            with VerticalScroll(id="writeback-diff-scroll"):
                yield Static("", id="writeback-diff")
            yield Static("", id="writeback-error")
            with Horizontal(id="writeback-buttons"):
                yield Button("Write (y)", variant="primary", id="writeback-write")
                reload = Button("Reload (r)", variant="warning", id="writeback-reload-button")
                reload.display = False
                yield reload
                if self.refusal is not None and self.refusal.alternative:
                    label = f"{self.refusal.alternative} (a)"
                    yield Button(label, variant="success", id="writeback-alternative-button")
                yield Button("Cancel (esc)", id="writeback-cancel-button")

    def make_plan(self) -> ShownPlan:
        """The write's plan (the core's): the diff, the new bytes, the warnings."""
        return writeback.plan_write(
            self.path, self.setting, original=self.original, current=self.current
        )

    def write(self, plan: Any) -> Path | None:
        """Write ``plan`` (atomic, a backup); returns the backup's path (None: none)."""
        return writeback.apply_plan(plan, backup=True)

    def notes(self) -> list[str]:
        """Lines shown above the diff, with the plan's warnings."""
        return []

    def on_mount(self) -> None:
        if self.refusal is not None:
            self._refused(self.refusal)
            return
        try:
            self.plan = self.make_plan()
        except HoloTuneError as err:
            self._error(str(err))
            self._refuse()
            return
        diff = self.plan.diff
        body = self.query_one("#writeback-diff", Static)
        if diff.strip():
            body.update(Syntax(diff, "diff", theme="ansi_dark", word_wrap=True))
        else:
            body.update(Text("No change: the file already holds this setting.", style="dim"))
            self._no_write()
        warnings = self.query_one("#writeback-warnings", Static)
        lines = [Text(n) for n in self.notes()]
        if self.worse is not None:
            lines.append(Text(f"✗ measured worse than the file's setting: {self.worse}", "red"))
        lines += [Text(f"⚠ {w}", style="yellow") for w in self.plan.warnings]
        if lines:
            warnings.update(Text("\n").join(lines))
        else:
            warnings.display = False
        focus = "#writeback-write" if self._writable() else "#writeback-cancel-button"
        self.query_one(focus, Button).focus()

    def _refused(self, refusal: Refusal) -> None:
        """The runtime would not read the write: why, what instead; nothing is planned."""
        self.query_one("#writeback-warnings", Static).display = False
        self.query_one("#writeback-diff-scroll").display = False
        self._error(refusal.why)
        self._error_hint(refusal.instead)
        self._no_write()
        if refusal.alternative:
            self.query_one("#writeback-alternative-button", Button).focus()
        else:
            self.query_one("#writeback-cancel-button", Button).focus()

    def _refuse(self) -> None:
        """Nothing can be written: no Write button and Cancel takes the focus; Reload is
        offered when the file is no longer what the app read."""
        self._no_write()
        if self._changed_on_disk():
            self.query_one("#writeback-reload-button", Button).display = True
            self._error_hint("r reads the file again and shows the diff against it")
        self.query_one("#writeback-cancel-button", Button).focus()

    def _no_write(self) -> None:
        """Nothing to write: the Write button goes (a disabled one invites a press that does
        nothing) and ``y`` does nothing."""
        write = self.query_one("#writeback-write", Button)
        write.disabled = True
        write.display = False
        self.refresh_bindings()

    def _offered(self, button: str) -> bool:
        """Whether the button ``#button`` is on screen and enabled (False before compose)."""
        return any(b.display and not b.disabled for b in self.query(f"#{button}"))

    def _writable(self) -> bool:
        return self.plan is not None and self._offered("writeback-write")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Write only with something to write; Reload only once offered; the alternative only
        when the refusal has one."""
        if action == "confirm":
            return self._writable()
        if action == "reload":
            return self._offered("writeback-reload-button")
        if action == "alternative":
            return self.refusal is not None and bool(self.refusal.alternative)
        return True

    def _changed_on_disk(self) -> bool:
        if self.original is None:
            return False
        try:
            return self.path.read_bytes() != self.original
        except OSError:
            return False

    def _error_hint(self, hint: str) -> None:
        error = self.query_one("#writeback-error", Static)
        text = Text.assemble(self._message, ("\n  " + hint, "dim"))
        error.update(text)

    def _error(self, message: str) -> None:
        error = self.query_one("#writeback-error", Static)
        self._message = Text(f"✗ {message}", style="bold red")
        error.update(self._message)
        error.display = True

    @on(Button.Pressed, "#writeback-write")
    def action_confirm(self) -> None:
        plan = self.plan
        if plan is None or not self._writable():
            return
        if not self._confirmed:  # measured worse: a second confirmation
            self._confirmed = True
            self._error(f"This setting is measured worse than the file's: {self.worse}.")
            self._error_hint("y again writes it anyway; esc cancels")
            return
        try:
            backup = self.write(plan)
        except HoloTuneError as err:
            self._error(str(err))
            self._refuse()
            return
        self.dismiss(backup if backup is not None else self.path)

    @on(Button.Pressed, "#writeback-reload-button")
    def action_reload(self) -> None:
        if self._offered("writeback-reload-button"):
            self.dismiss(RELOAD)

    @on(Button.Pressed, "#writeback-alternative-button")
    def action_alternative(self) -> None:
        if self.refusal is not None and self.refusal.alternative:
            self.dismiss(ALTERNATIVE)

    @on(Button.Pressed, "#writeback-cancel-button")
    def action_cancel(self) -> None:
        self.dismiss(None)
