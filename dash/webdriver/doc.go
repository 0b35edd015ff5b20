// Package webdriver drives headless Chromium through chromedriver's W3C
// WebDriver HTTP API, for the dashboard's browser tests: navigate, query
// the DOM, run scripts, read the browser console and take screenshots.
package webdriver
