//! The terminal workbench: ratatui + crossterm over the core model.
//!
//! The loop reads keys and mouse events, turns them into `Command`s through
//! the one keymap (`UiCommand`), applies them, and draws. It never blocks
//! on a source: sources run on their own threads and the model only reads
//! the store.

#[cfg(test)]
mod tests;
mod views;

use std::io::{self, Stdout};
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, KeyCode, KeyEvent, KeyEventKind,
    KeyModifiers, MouseButton, MouseEventKind,
};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use rocescope_core::{Command, Model, Overlay, UiCommand};

pub use views::{UiState, draw};

/// The key name `UiCommand::key` uses for a key event.
pub fn key_name(k: &KeyEvent) -> Option<String> {
    Some(match k.code {
        KeyCode::Tab => "Tab".into(),
        KeyCode::BackTab => "BackTab".into(),
        KeyCode::Up => "Up".into(),
        KeyCode::Down => "Down".into(),
        KeyCode::PageUp => "PageUp".into(),
        KeyCode::PageDown => "PageDown".into(),
        KeyCode::Home => "Home".into(),
        KeyCode::End => "End".into(),
        KeyCode::Enter => "Enter".into(),
        KeyCode::Esc => "Esc".into(),
        KeyCode::Char(' ') => "Space".into(),
        KeyCode::Char(c) => c.to_string(),
        _ => return None,
    })
}

/// Map a key to its command, from the one list of UI commands.
pub fn command_for_key(k: &KeyEvent, page_rows: i64) -> Option<Command> {
    if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
        return Some(Command::Quit);
    }
    let name = key_name(k)?;
    // Vim-style aliases for the arrows.
    let name = match name.as_str() {
        "j" => "Down".to_owned(),
        "k" => "Up".to_owned(),
        _ => name,
    };
    UiCommand::ALL
        .iter()
        .find(|c| c.key() == name)
        .map(|c| c.command(page_rows))
}

/// Handle one terminal event; returns the commands it produced.
pub fn handle_event(model: &Model, ui: &UiState, ev: &Event) -> Vec<Command> {
    let mut out = Vec::new();
    match ev {
        Event::Key(k) if k.kind != KeyEventKind::Release => {
            if model.overlay() == Overlay::FilterEdit {
                let mut text = model.filter_text().to_owned();
                match k.code {
                    KeyCode::Enter | KeyCode::Esc => out.push(Command::CloseOverlay),
                    KeyCode::Backspace => {
                        text.pop();
                        out.push(Command::SetFilter(text));
                    }
                    KeyCode::Char('u') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                        out.push(Command::SetFilter(String::new()))
                    }
                    KeyCode::Char(c) => {
                        text.push(c);
                        out.push(Command::SetFilter(text));
                    }
                    _ => {}
                }
                return out;
            }
            if model.overlay() == Overlay::CommandLine {
                match k.code {
                    KeyCode::Enter => out.push(Command::RunCommandLine(model.cmdline().to_owned())),
                    KeyCode::Esc => out.push(Command::CloseOverlay),
                    KeyCode::Tab => out.push(Command::SetCommandLine(
                        rocescope_core::cmdline::complete(model.cmdline()).line,
                    )),
                    KeyCode::Backspace => {
                        let mut s = model.cmdline().to_owned();
                        s.pop();
                        out.push(Command::SetCommandLine(s));
                    }
                    KeyCode::Char(c) => {
                        let mut s = model.cmdline().to_owned();
                        s.push(c);
                        out.push(Command::SetCommandLine(s));
                    }
                    _ => {}
                }
                return out;
            }
            if model.overlay() == Overlay::Help && matches!(k.code, KeyCode::Char('?')) {
                out.push(Command::CloseOverlay);
                return out;
            }
            if let Some(c) = command_for_key(k, i64::from(ui.page_rows)) {
                out.push(c);
            }
        }
        Event::Mouse(m) => match m.kind {
            MouseEventKind::Down(MouseButton::Left) => out.extend(ui.click(m.column, m.row)),
            MouseEventKind::ScrollDown => out.push(Command::MoveSelection(3)),
            MouseEventKind::ScrollUp => out.push(Command::MoveSelection(-3)),
            _ => {}
        },
        _ => {}
    }
    out
}

/// Puts the terminal back however the program ends, panics included.
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(io::stdout(), LeaveAlternateScreen, DisableMouseCapture);
}

/// Run the workbench until the user quits. Commands for the source
/// (simulator parameters, the sniffer filter) go to it through the core
/// (`source::steer`), as in the desktop workbench.
pub fn run(mut model: Model) -> anyhow::Result<()> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // A waveform parser's panic is an error the workbench shows; the
        // terminal stays the workbench's.
        if !rocescope_replay::contain::panic_contained() {
            restore();
        }
        previous(info);
    }));
    // Without a controlling terminal (cron, `ssh` without -t, a service)
    // the error is only "No such device or address".
    enable_raw_mode().map_err(|e| {
        anyhow::anyhow!(
            "the terminal workbench needs a terminal, and this process has none ({e}): run it in one; `stats`, `decode` and `--headless` print text, `gui` opens the desktop workbench"
        )
    })?;
    let _guard = TerminalGuard;
    execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture)?;
    let mut terminal: Terminal<CrosstermBackend<Stdout>> =
        Terminal::new(CrosstermBackend::new(io::stdout()))?;
    terminal.clear()?;
    let mut ui = UiState::default();
    let frame_budget = Duration::from_millis(50);
    while !model.quit() {
        model.tick(Instant::now());
        terminal.draw(|f| draw(f, &model, &mut ui))?;
        // Wait for input at most one frame; redraw anyway to show new data.
        if event::poll(frame_budget)? {
            loop {
                let ev = event::read()?;
                for c in handle_event(&model, &ui, &ev) {
                    model.apply(c);
                }
                rocescope_core::source::steer(&mut model);
                if !event::poll(Duration::ZERO)? {
                    break;
                }
            }
        }
    }
    // Back to the shell, then the partitions' last window and tables.
    drop(terminal);
    drop(_guard);
    if model.writing_partitions() {
        eprintln!("rocescope: writing the last window and the other tables of the partitions…");
        for line in model.finish_partitions() {
            eprintln!("rocescope: {line}");
        }
    }
    Ok(())
}
