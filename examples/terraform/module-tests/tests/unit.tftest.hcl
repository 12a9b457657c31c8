# Plan-only tests: the provider is mocked, so no cluster is needed. Provider functions
# still run (Terraform calls the real provider for them, offline).

mock_provider "kudo" {
  # OpenTofu checks a mocked resource's configuration with the real provider, references
  # included: the operator id that kudo_instance receives must look like one
  # (`<namespace>/<operatorversion-name>`), not a random mock string.
  mock_resource "kudo_operator" {
    defaults = {
      id = "default/webapp-1.27.0-0.1.0"
    }
  }
}

variables {
  parameters = {
    REPLICAS = "3"
    MESSAGE  = "planned"
  }
}

run "plans_the_instance_with_the_given_parameters" {
  command = plan

  assert {
    condition     = kudo_instance.this.parameters["REPLICAS"] == "3"
    error_message = "REPLICAS is not passed to the instance"
  }

  assert {
    condition     = contains(output.rendered, "Deployment/webapp-instance")
    error_message = "the package does not render its Deployment: ${jsonencode(output.rendered)}"
  }
}

run "rejects_a_parameter_the_package_does_not_declare" {
  command = plan

  variables {
    parameters = {
      NO_SUCH = "x"
    }
  }

  expect_failures = [kudo_instance.this]
}

run "rejects_a_value_of_the_wrong_type" {
  command = plan

  variables {
    parameters = {
      REPLICAS = "two"
    }
  }

  expect_failures = [kudo_instance.this]
}
