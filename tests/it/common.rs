//! Fixtures shared by the integration tests.

/// A tiny Thm 6.5 spec (three phi points, a few replicates: seconds to run) named `name`, for
/// end-to-end tests of the runner, its results files and the config fuzz test.
pub fn tiny_spec(name: &str) -> String {
    format!("\nname = \"{name}\"\n{TINY_BODY}")
}

const TINY_BODY: &str = r#"theorem = "6.5"
seed = 3
loss = { family = "sharp" }
batch_size = 5.0

[data]
source = "generated"
n = 60
d = 3
radial = { k = 2.0, g = 1.0, law = { family = "pareto", alpha = 2.5 } }
labels = { kind = "sharp_centers", spread = 1.0 }

[privacy]
nu = 1.0
delta = 1e-5

[sweep]
vary = "epsilon"

[constants]
dist0 = 1.0

[quick]
phi_max = 0.3
phi_min = 0.1
points = 3
replicates = 3
iterates = 4
bootstrap = 50

[full]
phi_max = 0.3
phi_min = 0.03
points = 4
replicates = 4
iterates = 4

[[series]]
k = 2.0
"#;
