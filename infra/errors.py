"""Errors of the infra tier; each message says what to do next.

* VoicemeshError (wire.errors)
  * InfraError - provisioning could not do what was asked
    * TerraformMissing - the Terraform binary or the null provider is not installed
    * TerraformFailed - a Terraform command exited with an error (its output tail is attached)
    * EnvironmentMissing - the named environment does not exist under infra/envs/
"""

from __future__ import annotations

from wire.errors import VoicemeshError


class InfraError(VoicemeshError):
    code = "infra_error"


class TerraformMissing(InfraError):
    code = "terraform_missing"


class TerraformFailed(InfraError):
    code = "terraform_failed"


class EnvironmentMissing(InfraError):
    code = "environment_missing"
