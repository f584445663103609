use crate::{ConfigError, RunOutput, Scenario};

pub struct World;

impl World {
    pub fn new(_s: &Scenario) -> Result<World, ConfigError> {
        Err(ConfigError { field: "engine".into(), message: "simulator core not built yet".into() })
    }
    pub fn run(self) -> RunOutput {
        unreachable!()
    }
}
