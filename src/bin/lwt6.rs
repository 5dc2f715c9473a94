//! The `lwt6` command line.
fn main() {
    println!("lwt6: work in progress");
}
