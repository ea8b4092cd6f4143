//! Small pieces every stage shares: escaping untrusted text, JavaScript's
//! string semantics for the ports, limits on hostile input, numbers as every
//! output prints them, output sets replaced whole, the thread pool, the
//! progress trait and "did you mean".

pub mod escape;
pub mod js;
pub mod limits;
pub mod number;
pub mod outdir;
pub mod pool;
pub mod progress;
pub mod suggest;
