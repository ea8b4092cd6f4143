//! `looptune label`: a keyboard-driven terminal labeller, and `--suggest`,
//! the same ranked queue as CSV for people who label in a spreadsheet.
//!
//! [`queue`] ranks sessions, [`store`] edits the labels file, [`tui`] holds
//! the state machine and the screen; this module only runs the terminal.

pub mod queue;
pub mod store;
pub mod tui;

use crate::error::{Error, Result};
use std::io::{IsTerminal, Write};

/// Open the terminal, run the labeller until `q`, and restore the terminal
/// (also when drawing fails or the program panics).
pub fn run_terminal(app: &mut tui::App) -> Result<()> {
    check_terminal()?;
    let io = |e: std::io::Error| Error::io("<terminal>", e);
    crossterm::terminal::enable_raw_mode().map_err(io)?;
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = crossterm::terminal::disable_raw_mode();
            let _ = crossterm::execute!(
                std::io::stdout(),
                crossterm::terminal::LeaveAlternateScreen,
                crossterm::cursor::Show
            );
        }
    }
    let _restore = Restore;
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = crossterm::terminal::disable_raw_mode();
        let _ = crossterm::execute!(std::io::stdout(), crossterm::terminal::LeaveAlternateScreen);
        hook(info);
    }));
    let mut stdout = std::io::stdout();
    crossterm::execute!(stdout, crossterm::terminal::EnterAlternateScreen).map_err(io)?;
    let mut terminal =
        ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(stdout)).map_err(io)?;
    while !app.quit {
        terminal.draw(|f| app.draw(f)).map_err(io)?;
        use crossterm::event::{Event, KeyCode, KeyEventKind, KeyModifiers};
        if let Event::Key(k) = crossterm::event::read().map_err(io)? {
            if k.kind != KeyEventKind::Press {
                continue;
            }
            let key = match k.code {
                KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                    tui::Key::Char('q')
                }
                KeyCode::Char(c) => tui::Key::Char(c),
                KeyCode::Up => tui::Key::Up,
                KeyCode::Down => tui::Key::Down,
                KeyCode::Esc => tui::Key::Esc,
                KeyCode::PageDown => tui::Key::PageDown,
                KeyCode::PageUp => tui::Key::PageUp,
                KeyCode::Enter => tui::Key::Enter,
                KeyCode::Backspace => tui::Key::Backspace,
                _ => continue,
            };
            app.key(key);
        }
    }
    terminal.show_cursor().map_err(io)?;
    Ok(())
}

/// The labeller needs a terminal on stdin and stdout; say what to do instead.
pub fn check_terminal() -> Result<()> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(Error::Usage(
            "looptune label needs a terminal (stdin and stdout); use `looptune label --suggest PATHS` to get the queue as CSV instead"
                .into(),
        ));
    }
    Ok(())
}

/// Write the `--suggest` CSV.
pub fn write_suggest(bytes: &[u8], out: &mut dyn Write) -> Result<()> {
    out.write_all(bytes).map_err(|e| Error::io("<stdout>", e))
}
