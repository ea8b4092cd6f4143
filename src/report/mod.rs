//! Report writers: terminal and JSON output, CSV, Markdown, JUnit and HTML.

pub mod text;
