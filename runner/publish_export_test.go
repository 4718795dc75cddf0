package runner

// PublishForTest is the publish stage, for the tests of package runner_test.
var PublishForTest = publish
